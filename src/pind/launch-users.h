/* SPDX-License-Identifier: MIT */
/* Whose launches count (--launch-users): the launch counts steer which pages stay locked, and any
 * local user can raise a program's count, by launching it (exec, seen by fanotify) or through a
 * program its own headstartd serves, which may write any report (served programs are forks of a
 * zygote: their executable is headstartd's). A device whose home screen runs as one user names that
 * user, and no other user's launches push its pages out. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* The users, comma-separated, by name or number. Returns 0, or -EINVAL (logged) for an unknown one. */
int launch_users_parse(const char *list);

/* Whether a launch by uid counts: every user's when --launch-users was not given. */
bool launch_user_counts(uid_t uid);

/* The real user of process pid, or (uid_t) -1 when it is gone. */
uid_t launch_user_of(pid_t pid);
