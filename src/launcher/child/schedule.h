/* SPDX-License-Identifier: MIT */
/* Per-program scheduling, set in the daemon's configuration only (`schedule = PROGRAM KEY=VALUE...`):
 * a policy with its priority or deadline parameters, CPU affinity, nice, utilization clamps, and a
 * cgroup with a CPU budget or a cpuset. Applied to the served child before main, as a program
 * exec'd under chrt, taskset, nice and a cgroup would have them, and to a client that execs the
 * program itself when it is declined, so that where it ran never changes how it is scheduled. */
#pragma once

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "string-list.h"

struct schedule {
        char *program;   /* as configured */
        dev_t dev;       /* the program file, found when the daemon starts */
        ino_t ino;
        bool has_policy; /* policy=other|batch|idle|fifo|rr|deadline */
        int policy;
        unsigned priority;                         /* fifo, rr: 1-99 */
        uint64_t runtime_ns, deadline_ns, period_ns; /* deadline */
        bool has_cpus;   /* cpus=LIST: affinity */
        cpu_set_t cpus;
        bool has_nice;   /* nice=-20..19 */
        int nice;
        int uclamp_min, uclamp_max; /* uclamp-min=, uclamp-max= 0-1024; -1: not set */
        struct cgroup_limits cgroup; /* cpu-max=, cpuset= */
};

/* Parses "PROGRAM KEY=VALUE..."; on error logs one line naming the setting and returns -EINVAL. */
int schedule_parse(const char *spec, struct schedule *ret);
void schedule_done(struct schedule *s);

/* Every --schedule: parsed and tried, making the cgroups (at_start: the supervisor, before it
 * listens), or parsed and found again (a zygote). Logs one line and returns -EINVAL or -EPERM on the
 * first that cannot be. */
int schedules_load(const struct string_list *specs, bool at_start, struct schedule **ret, size_t *ret_n);
void schedules_free(struct schedule *list, size_t n);
/* When the daemon stops: their cgroups go. */
void schedules_remove_cgroups(const struct schedule *list, size_t n);

/* The schedule of the program file dev/ino, or NULL. */
const struct schedule *schedule_for(const struct schedule *list, size_t n, dev_t dev, ino_t ino);

/* At the daemon's start: tries every setting in a throwaway child (and makes the cgroups), so that
 * a missing privilege is one clear line now, not a failure at a launch. */
int schedule_check(struct schedule *s, unsigned index);

/* The cgroup of schedule index (made by schedule_check) found again in a zygote. */
int schedule_find_cgroup(struct schedule *s, unsigned index);

/* Applies it to pid (0: the caller). Returns 0, or a negative errno with *what naming the step. */
int schedule_apply(const struct schedule *s, pid_t pid, const char **what);

/* NULL when pid is scheduled as the caller is (policy and its parameters, nice, clamps, affinity),
 * else what differs first. A served program without a --schedule gets the daemon's, where exec would
 * keep the client's. */
const char *schedule_difference(pid_t pid);

/* "fifo 50, cpus 1, nice -5, cpu-max 20000/100000": what it sets, for logs and --status. */
void schedule_describe(const struct schedule *s, char *buf, size_t size);
