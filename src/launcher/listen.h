/* SPDX-License-Identifier: MIT */
/* Where the daemon listens: the socket path, its private directory, and the listening socket. */
#pragma once

#include <stddef.h>

/* $XDG_RUNTIME_DIR/headstart/socket, or -ENXIO when XDG_RUNTIME_DIR is unset. */
int listen_default_path(char *buf, size_t size);

/* Creates the socket's directory (0700 when it is ours to create), refuses a path where another
 * daemon answers, replaces a stale socket, binds and listens. Returns the fd or a negative errno,
 * after logging what went wrong. */
int listen_open(const char *path);
