/* SPDX-License-Identifier: MIT */
/* A cgroup per scheduled program, under the daemon's own (delegated) one: a CPU budget (cpu-max)
 * and a cpuset (exclusive where the kernel allows). cgroup v2, where the daemon's group must be
 * delegated to its user (systemd Delegate=yes) and the daemon moves itself to a leaf first, as v2
 * wants no process in a group that has children with controllers; and cgroup v1, where cpu and
 * cpuset are separate hierarchies. */
#pragma once

#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct cgroup_limits {
        bool has_cpu_max;
        uint64_t quota_us, period_us; /* quota 0: no limit ("max") */
        bool has_cpuset;
        cpu_set_t cpuset;
        bool realtime; /* its program runs under fifo or rr: a v1 group needs an RT budget too */
        /* Where the group is, once made or found: one directory on v2, one per controller on v1. */
        char cpu_dir[PATH_MAX], cpuset_dir[PATH_MAX];
        bool exclusive; /* the cpuset is a partition of its own (v2) or cpu_exclusive (v1) */
        bool v1;        /* the groups are in v1 hierarchies */
};

static inline bool cgroup_wanted(const struct cgroup_limits *l) {
        return l->has_cpu_max || l->has_cpuset;
}

/* "0,2,3": as cpuset.cpus takes it. */
void cgroup_format_cpus(const cpu_set_t *set, char *buf, size_t size);

/* Makes (or, with create false, finds) the group NAME under the daemon's and writes the limits. */
int cgroup_setup(struct cgroup_limits *l, const char *name, bool create);

/* Removes the group, once the daemon stops (a group with processes left stays). */
void cgroup_remove(const struct cgroup_limits *l);

/* Moves pid (0: the caller, which must have a single thread) into the group. */
int cgroup_join(const struct cgroup_limits *l, pid_t pid);
