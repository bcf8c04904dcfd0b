/* SPDX-License-Identifier: MIT */
/* The supervisor: the long-lived headstartd process. It owns the listening socket and runs the
 * zygotes, each a fresh exec of headstartd (so each has its own address layout and stack canary)
 * that preloads and serves launches. A refresh (--refresh-launches, --refresh-seconds, SIGHUP, a
 * loaded file changing on disk) starts a new zygote; while it preloads, the old one keeps serving;
 * once the new one accepts, the old one stops accepting, finishes what it accepted, waits for its
 * programs and exits. Both accept on the same socket, so no request is refused or waits for a
 * preload. The supervisor loads nothing itself. */
#pragma once

#include "options.h"

/* Runs until SIGTERM/SIGINT and every zygote has ended; takes listen_fd and closes it. `argv` is
 * how we were started; zygotes get the same arguments. Returns 0 or a negative errno. */
int supervisor_run(const struct daemon_options *o, int listen_fd, const char *socket_path, char *argv[]);
