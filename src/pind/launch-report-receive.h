/* SPDX-License-Identifier: MIT */
/* Launches that headstartd served, reported on a datagram socket (launch-report.h). */
#pragma once

#include <sys/types.h>

/* Binds the socket at path, writable by every user (any user's headstartd may report). Returns the
 * fd, or a negative errno (logged: launches served are then not counted). */
int launch_reports_listen(const char *path);
/* Reads one reported launch; returns 1 with the program's identity, 0 when none is waiting or the
 * path names no file, a negative errno on error. */
int launch_reports_read(int fd, dev_t *ret_dev, ino_t *ret_ino);
