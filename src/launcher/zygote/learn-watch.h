/* SPDX-License-Identifier: MIT */
/* The zygote's side of learning (learn.h): what served children loaded after main, from the page a
 * child fills at exit and from the maps of children that run long. New objects are saved at once;
 * once enough are new, a fresh zygote should preload them: the functions below say so. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct child;
struct server;

/* Learns from a child that ended, before it is freed. Returns true when a fresh zygote is wanted,
 * with why in reason. */
bool learn_child_ended(struct server *s, const struct child *ch, char *reason, size_t size);
/* Milliseconds until a running child's maps are due to be read: 0 now, -1 none. */
int learn_scan_in_ms(const struct server *s);
/* Reads the maps of every running child that is due; returns as learn_child_ended. */
bool learn_scan(struct server *s, char *reason, size_t size);
