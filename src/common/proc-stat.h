/* SPDX-License-Identifier: MIT */
/* /proc/PID/stat, read once and split into its fields (proc(5)'s 1-based numbers). The command name
 * (field 2) is in parentheses and may hold spaces and parentheses itself: fields are counted from
 * after the last ')'. Read with open and read, no allocation: the launched child uses it between
 * fork and main. */
#pragma once

#include <sys/types.h>

#define PROC_STAT_FIELDS 53

struct proc_stat {
        char state;                            /* field 3: R, S, D, T, t, Z... */
        unsigned long long v[PROC_STAT_FIELDS]; /* fields 4 and on, as unsigned numbers; 0 past the end */
};

/* The fields of pid (0: this process). Returns 0, -errno when it cannot be opened (gone), or -EIO. */
int proc_stat_read(pid_t pid, struct proc_stat *ret);

/* Its CPU time so far, user and system (fields 14 and 15), in clock ticks. */
static inline unsigned long long proc_stat_cpu_ticks(const struct proc_stat *st) {
        return st->v[14] + st->v[15];
}
