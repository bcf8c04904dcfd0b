/* SPDX-License-Identifier: MIT */
/* Launches that headstartd served, reported on a datagram socket (launch-report.h). */
#pragma once

#include <sys/types.h>

/* Binds the socket at path, writable by every user (any user's headstartd may report); reports are
 * taken from processes that run daemon (headstartd's path; NULL: the one beside this program) only. Returns the fd, or a negative errno
 * (logged: launches served are then not counted). */
int launch_reports_listen(const char *path, const char *daemon);
/* Reads one reported launch; returns 1 with the program's identity, 0 when none is waiting, the
 * path names no file or another process than a headstartd sent it, a negative errno on error. */
int launch_reports_read(int fd, dev_t *ret_dev, ino_t *ret_ino);
