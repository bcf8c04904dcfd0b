/* SPDX-License-Identifier: MIT */
/* Where the daemon listens: the socket's private directory, and the listening socket (its default
 * path is the protocol's: hs_default_socket_path). */
#pragma once

/* Creates the socket's directory (0700 when it is ours to create), refuses a path where another
 * daemon answers, replaces a stale socket, binds and listens. Returns the fd or a negative errno,
 * after logging what went wrong. */
int listen_open(const char *path);
