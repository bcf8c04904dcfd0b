/* SPDX-License-Identifier: MIT */
/* The two pieces of the systemd protocol a daemon needs, without libsystemd:
 * socket activation (sd_listen_fds(3)) and readiness notification (sd_notify(3)). */
#pragma once

/* Returns the activated listening socket (fd 3), -ENOENT when not socket-activated, or -ENOTSOCK
 * when fd 3 is not a listening socket; removes the LISTEN_* variables so that nothing we start
 * inherits them. Call it before opening any fd, so that fd 3 cannot be one of ours. */
int systemd_listen_fd(void);

/* Sends `state` to $NOTIFY_SOCKET; does nothing (returns 0) when it is not set. */
int systemd_notify(const char *state);
