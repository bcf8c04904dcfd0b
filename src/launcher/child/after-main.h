/* SPDX-License-Identifier: MIT */
/* What a served program loads after main (plugins, GL drivers, GIO modules...), seen two ways:
 * - at exit, and before each dlclose (an object closed before exit is gone from the link map by then:
 *   Mesa's GL driver when Qt closes its display): the child writes the objects its link map gained
 *   after main into a page it shares with the daemon (mapped before the fork), so no fd and no system
 *   call is added to the program;
 * - while it runs: the daemon reads the child's /proc/PID/maps at fixed ages, for programs that run
 *   long (a home screen) or are killed rather than exit.
 * The daemon (learn.c) keeps what it learns and preloads it from the next zygote on. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The shared page: a ready flag, then NUL-terminated paths one after another, ending with an empty one. */
#define AFTER_MAIN_PAGE_SIZE (64u * 1024u)

struct after_main_page {
        volatile unsigned written; /* set once paths holds what was recorded (again at each record) */
        char paths[AFTER_MAIN_PAGE_SIZE - sizeof(unsigned)];
};

/* Maps a page shared with children forked after this call; NULL when it cannot (learning is then
 * skipped for that child, nothing else changes). */
struct after_main_page *after_main_page_new(void);
void after_main_page_free(struct after_main_page *page);

/* In the child, just before main: counts the objects loaded so far and arranges for the ones loaded
 * later to be written into page at exit and before each dlclose (by this process only, not by
 * children it forks). */
void after_main_arm(struct after_main_page *page);

/* In the daemon, after the child ended: calls fn for each path the child wrote (at exit through
 * exit(), and before each dlclose: none of what it loaded later when it was killed or called _exit). */
void after_main_page_read(const struct after_main_page *page, void (*fn)(const char *path, void *data), void *data);

/* In the daemon, while the child runs: calls fn for each file mapped executable into process pid
 * (what the loader maps of a shared object). Returns 0 or a negative errno (the process is gone). */
int after_main_scan_maps(pid_t pid, void (*fn)(const char *path, dev_t dev, ino_t ino, void *data), void *data);

/* The ages (ms after the launch) at which a running child's maps are read. */
#define AFTER_MAIN_SCAN_FIRST_MS 500u
#define AFTER_MAIN_SCAN_LAST_MS 5000u
