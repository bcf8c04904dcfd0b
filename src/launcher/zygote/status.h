/* SPDX-License-Identifier: MIT */
/* The answer to a STATUS request: what `headstart-run --status` prints. One "key: value" per line,
 * so that people can read it and scripts can grep it; docs/protocol.md lists the keys. */
#pragma once

#include <stddef.h>

struct server;

/* The text, malloc'ed into *ret_text (not NUL-terminated: *ret_len bytes). Returns 0 or -ENOMEM. */
int status_compose(const struct server *s, char **ret_text, size_t *ret_len);
