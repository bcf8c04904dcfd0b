/* SPDX-License-Identifier: MIT */
/* Launches by exec, seen with fanotify: an FAN_OPEN_EXEC mark on each program of the plan gives one
 * event per execve() of it, whoever runs it. Needs CAP_SYS_ADMIN (a root service has it); without
 * it only the launches headstartd reports are counted. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "plan.h"

/* Returns the fanotify fd, or a negative errno (logged once, saying whether the launches headstartd
 * serves are counted: served_counted, its report socket is open). */
int exec_watch_open(bool served_counted);
/* Marks every program of the plan (after dropping the marks of an earlier plan: a replaced file
 * is a new inode to mark). */
void exec_watch_mark(int fd, const struct pin_plan *plan);
/* Reads one event; returns 1 with the executed file's identity, 0 when none is waiting, a negative
 * errno on error. */
int exec_watch_read(int fd, dev_t *ret_dev, ino_t *ret_ino);
