/* SPDX-License-Identifier: MIT */
/* Tells headstart-pind about each launch served, so that what it keeps resident follows what is
 * launched (src/common/launch-report.h has the format). */
#pragma once

struct daemon_options;

/* The socket to report to, from --report-launches; NULL when off. */
const char *launch_report_socket(const struct daemon_options *o);

/* A datagram socket to report with, or -1 when reporting is off (path NULL) or impossible. */
int launch_report_open(const char *path);
/* One datagram holding the program's path; never blocks, and nothing happens when no
 * headstart-pind listens at path. */
void launch_report_send(int fd, const char *path, const char *program);
