/* SPDX-License-Identifier: MIT */
#include "schedule.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "preload.h"
#include "throwaway.h"

/* linux/sched/types.h and linux/sched.h, which glibc 2.36 does not wrap (sched_setattr). */
struct kernel_sched_attr {
        uint32_t size;
        uint32_t sched_policy;
        uint64_t sched_flags;
        int32_t sched_nice;
        uint32_t sched_priority;
        uint64_t sched_runtime, sched_deadline, sched_period;
        uint32_t sched_util_min, sched_util_max;
};
#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif
#define SCHED_FLAG_KEEP_POLICY 0x08
#define SCHED_FLAG_KEEP_PARAMS 0x10
#define SCHED_FLAG_UTIL_CLAMP_MIN 0x20
#define SCHED_FLAG_UTIL_CLAMP_MAX 0x40
#define DEADLINE_MIN_NS 1024u /* the kernel's smallest runtime */

static const struct {
        const char *name;
        int policy;
} policies[] = {
        { "other", SCHED_OTHER }, { "batch", SCHED_BATCH }, { "idle", SCHED_IDLE },
        { "fifo", SCHED_FIFO },   { "rr", SCHED_RR },       { "deadline", SCHED_DEADLINE },
};

static const char *policy_name(int policy) {
        for (size_t i = 0; i < ELEMENTSOF(policies); i++)
                if (policies[i].policy == policy)
                        return policies[i].name;
        return "?";
}

static bool parse_long(const char *value, long min, long max, long *ret) {
        char *end;
        errno = 0;
        long v = strtol(value, &end, 10);
        if (errno || end == value || *end || v < min || v > max)
                return false;
        *ret = v;
        return true;
}

/* "10ms", "500us", "2s", "1000ns"; a bare number is microseconds, as in cpu.max. */
static bool parse_duration_ns(const char *value, uint64_t *ret) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(value, &end, 10);
        if (errno || end == value || value[0] == '-')
                return false;
        static const struct {
                const char *suffix;
                uint64_t ns;
        } units[] = { { "ns", 1 }, { "us", 1000 }, { "", 1000 }, { "ms", 1000000 }, { "s", 1000000000 } };
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (strcmp(end, units[i].suffix) == 0) {
                        if (v > UINT64_MAX / units[i].ns)
                                return false;
                        *ret = v * units[i].ns;
                        return true;
                }
        return false;
}

/* "0-2,5": CPUs 0, 1, 2 and 5. */
static bool parse_cpus(const char *value, cpu_set_t *set) {
        CPU_ZERO(set);
        const char *p = value;
        while (*p) {
                char *end;
                long first = strtol(p, &end, 10), last = first;
                if (end == p || first < 0)
                        return false;
                if (*end == '-') {
                        p = end + 1;
                        last = strtol(p, &end, 10);
                        if (end == p || last < first)
                                return false;
                }
                if (last >= CPU_SETSIZE)
                        return false;
                for (long cpu = first; cpu <= last; cpu++)
                        CPU_SET((int) cpu, set);
                if (*end != ',' && *end != '\0')
                        return false;
                p = *end ? end + 1 : end;
        }
        return CPU_COUNT(set) > 0;
}

/* "20ms/100ms" (a budget of 20 ms of CPU every 100 ms) or "max/100ms". */
static bool parse_cpu_max(const char *value, struct cgroup_limits *l) {
        const char *slash = strchr(value, '/');
        if (!slash)
                return false;
        char quota[64];
        if ((size_t) (slash - value) >= sizeof quota)
                return false;
        memcpy(quota, value, (size_t) (slash - value));
        quota[slash - value] = '\0';
        uint64_t q = 0, p;
        if (strcmp(quota, "max") != 0 && (!parse_duration_ns(quota, &q) || q < 1000000))
                return false;
        if (!parse_duration_ns(slash + 1, &p) || p < 1000000 || p > 1000000000)
                return false;
        l->quota_us = q / 1000;
        l->period_us = p / 1000;
        l->has_cpu_max = true;
        return true;
}

static int parse_setting(struct schedule *s, const char *key, const char *value) {
        long v;
        if (strcmp(key, "policy") == 0) {
                for (size_t i = 0; i < ELEMENTSOF(policies); i++)
                        if (strcmp(value, policies[i].name) == 0) {
                                s->has_policy = true;
                                s->policy = policies[i].policy;
                                return 0;
                        }
                return -EINVAL;
        }
        if (strcmp(key, "priority") == 0 && parse_long(value, 1, 99, &v))
                return s->priority = (unsigned) v, 0;
        if (strcmp(key, "runtime") == 0)
                return parse_duration_ns(value, &s->runtime_ns) ? 0 : -EINVAL;
        if (strcmp(key, "deadline") == 0)
                return parse_duration_ns(value, &s->deadline_ns) ? 0 : -EINVAL;
        if (strcmp(key, "period") == 0)
                return parse_duration_ns(value, &s->period_ns) ? 0 : -EINVAL;
        if (strcmp(key, "cpus") == 0)
                return (s->has_cpus = parse_cpus(value, &s->cpus)) ? 0 : -EINVAL;
        if (strcmp(key, "nice") == 0 && parse_long(value, -20, 19, &v))
                return s->has_nice = true, s->nice = (int) v, 0;
        if (strcmp(key, "uclamp-min") == 0 && parse_long(value, 0, 1024, &v))
                return s->uclamp_min = (int) v, 0;
        if (strcmp(key, "uclamp-max") == 0 && parse_long(value, 0, 1024, &v))
                return s->uclamp_max = (int) v, 0;
        if (strcmp(key, "cpu-max") == 0)
                return parse_cpu_max(value, &s->cgroup) ? 0 : -EINVAL;
        if (strcmp(key, "cpuset") == 0)
                return (s->cgroup.has_cpuset = parse_cpus(value, &s->cgroup.cpuset)) ? 0 : -EINVAL;
        return -EINVAL;
}

/* What the settings together must be; NULL when they are. */
static const char *inconsistency(const struct schedule *s) {
        bool rt = s->has_policy && (s->policy == SCHED_FIFO || s->policy == SCHED_RR);
        bool dl = s->has_policy && s->policy == SCHED_DEADLINE;
        if (rt != (s->priority != 0))
                return "priority= goes with policy=fifo or rr, and they need it";
        if (dl != (s->runtime_ns || s->deadline_ns || s->period_ns))
                return "runtime=, deadline= and period= go with policy=deadline, and it needs them";
        if (dl && !(DEADLINE_MIN_NS <= s->runtime_ns && s->runtime_ns <= s->deadline_ns &&
                    s->deadline_ns <= s->period_ns))
                return "policy=deadline needs 1us <= runtime <= deadline <= period";
        if (s->uclamp_min >= 0 && s->uclamp_max >= 0 && s->uclamp_min > s->uclamp_max)
                return "uclamp-min is above uclamp-max";
        if (!s->has_policy && !s->has_cpus && !s->has_nice && s->uclamp_min < 0 && s->uclamp_max < 0 &&
            !cgroup_wanted(&s->cgroup))
                return "it sets nothing (policy=, priority=, runtime=, deadline=, period=, cpus=, nice=, uclamp-min=, "
                       "uclamp-max=, cpu-max=, cpuset=)";
        return NULL;
}

int schedule_parse(const char *spec, struct schedule *s) {
        *s = (struct schedule){ .uclamp_min = -1, .uclamp_max = -1 };
        _cleanup_free_ char *copy = strdup(spec);
        if (!copy)
                return log_error("out of memory"), -ENOMEM;
        char *save = NULL, *word = strtok_r(copy, " \t", &save);
        if (!word || strchr(word, '='))
                return log_error("schedule: expected 'PROGRAM KEY=VALUE...', got '%s'", spec), -EINVAL;
        s->program = strdup(word);
        if (!s->program)
                return log_error("out of memory"), -ENOMEM;
        while ((word = strtok_r(NULL, " \t", &save))) {
                char *eq = strchr(word, '=');
                if (eq)
                        *eq = '\0';
                if (!eq || parse_setting(s, word, eq + 1) < 0) {
                        log_error("schedule %s: bad setting '%s%s%s'", s->program, word, eq ? "=" : "", eq ? eq + 1 : "");
                        return schedule_done(s), -EINVAL;
                }
        }
        s->cgroup.realtime = s->has_policy && (s->policy == SCHED_FIFO || s->policy == SCHED_RR);
        const char *why = inconsistency(s);
        if (why) {
                log_error("schedule %s: %s", s->program, why);
                return schedule_done(s), -EINVAL;
        }
        return 0;
}

void schedule_done(struct schedule *s) {
        free(s->program);
        s->program = NULL;
}

static int set_attr(const struct schedule *s, pid_t pid) {
        struct kernel_sched_attr attr = { .size = sizeof attr };
        if (s->has_policy) {
                attr.sched_policy = (uint32_t) s->policy;
                attr.sched_priority = s->priority;
                attr.sched_runtime = s->runtime_ns;
                attr.sched_deadline = s->deadline_ns;
                attr.sched_period = s->period_ns;
                /* The nice value rides along for the fair policies; keep the one set just before. */
                errno = 0;
                int nice = getpriority(PRIO_PROCESS, (id_t) pid);
                attr.sched_nice = errno ? 0 : nice;
        } else {
                attr.sched_flags |= SCHED_FLAG_KEEP_POLICY | SCHED_FLAG_KEEP_PARAMS;
        }
        if (s->uclamp_min >= 0)
                attr.sched_flags |= SCHED_FLAG_UTIL_CLAMP_MIN, attr.sched_util_min = (uint32_t) s->uclamp_min;
        if (s->uclamp_max >= 0)
                attr.sched_flags |= SCHED_FLAG_UTIL_CLAMP_MAX, attr.sched_util_max = (uint32_t) s->uclamp_max;
        if (!s->has_policy && !(attr.sched_flags & (SCHED_FLAG_UTIL_CLAMP_MIN | SCHED_FLAG_UTIL_CLAMP_MAX)))
                return 0;
        return syscall(SYS_sched_setattr, pid, &attr, 0) < 0 ? -errno : 0;
}

/* The order matters. A fifo or rr policy comes first: moving to other CPUs (a cpuset, affinity)
 * then preempts what runs there instead of waiting behind it at the default policy. The cgroup
 * comes before affinity (a cpuset narrows the CPUs affinity may name), and affinity before a
 * deadline policy, whose tasks may change it no more. */
int schedule_apply(const struct schedule *s, pid_t pid, const char **what) {
        bool realtime_first = s->cgroup.realtime;
        const char *policy_step = s->has_policy ? "setting its scheduling policy" : "setting its utilization clamps";
        int r = 0;
        if (s->has_nice && setpriority(PRIO_PROCESS, (id_t) pid, s->nice) < 0)
                return *what = "setting its nice value", -errno;
        if (realtime_first && (r = set_attr(s, pid)) < 0)
                return *what = policy_step, r;
        if (cgroup_wanted(&s->cgroup) && (r = cgroup_join(&s->cgroup, pid)) < 0)
                return *what = "joining its cgroup", r;
        if (s->has_cpus && sched_setaffinity(pid, sizeof s->cpus, &s->cpus) < 0)
                return *what = "setting its CPU affinity", -errno;
        if (!realtime_first && (r = set_attr(s, pid)) < 0)
                return *what = policy_step, r;
        return 0;
}

static const char *hint(const struct schedule *s, const char *what, int r) {
        if (r == -EXDEV)
                return " (the cpuset's CPUs overlap another exclusive cpuset, or are not the daemon's own)";
        if (r != -EPERM && r != -EACCES && r != -EBUSY)
                return "";
        if (strstr(what, "cgroup"))
                return " (the daemon needs a cgroup delegated to its user: systemd Delegate=yes)";
        if (strstr(what, "policy") && s->policy == SCHED_DEADLINE)
                return " (SCHED_DEADLINE needs CAP_SYS_NICE, room in the deadline bandwidth, and no cpus= narrower "
                       "than its root domain)";
        if (strstr(what, "policy"))
                return " (real-time policies need CAP_SYS_NICE or an RLIMIT_RTPRIO at or above the priority: "
                       "AmbientCapabilities=CAP_SYS_NICE or LimitRTPRIO= in the unit)";
        if (strstr(what, "nice"))
                return " (a negative nice value needs CAP_SYS_NICE or RLIMIT_NICE)";
        return "";
}

/* Per daemon (its supervisor's pid: a zygote's parent) and schedule, so that daemons do not share. */
static void group_name(char *buf, size_t size, pid_t supervisor, unsigned index) {
        snprintf(buf, size, "headstart-%d-%u", (int) supervisor, index);
}

/* Everything but the cgroup, tried on a throwaway child: what fails there would fail at a launch. */
static int try_in_child(struct schedule *s) {
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return log_error_errno(errno, "pipe"), -errno;
        pid_t pid = throwaway_fork();
        if (pid < 0) {
                int r = log_error_errno(errno, "fork");
                close(pipefd[0]);
                close(pipefd[1]);
                return r;
        }
        if (pid == 0) {
                const char *what = "";
                int e = schedule_apply(s, 0, &what);
                char msg[128];
                int n = snprintf(msg, sizeof msg, "%d %s", -e, what);
                (void) !write(pipefd[1], msg, (size_t) n);
                _exit(0);
        }
        close(pipefd[1]);
        char msg[128] = "";
        ssize_t n = read(pipefd[0], msg, sizeof msg - 1);
        close(pipefd[0]);
        (void) waitpid(pid, NULL, 0);
        msg[n > 0 ? n : 0] = '\0';
        int e = atoi(msg);
        const char *what = strchr(msg, ' ') ? strchr(msg, ' ') + 1 : "";
        if (n <= 0 || e) {
                log_error("schedule %s: the daemon cannot apply it, %s failed: %s%s", s->program, what,
                          strerror(e ? e : EIO), hint(s, what, -e));
                return -EPERM;
        }
        return 0;
}

int schedule_check(struct schedule *s, unsigned index) {
        char name[64];
        group_name(name, sizeof name, getpid(), index);
        int r;
        if (cgroup_wanted(&s->cgroup) && (r = cgroup_setup(&s->cgroup, name, true)) < 0)
                return log_error_errno(r == -EXDEV ? -EINVAL : r, "schedule %s: cannot make its cgroup%s",
                                       s->program, hint(s, "cgroup", r)),
                       -EPERM;
        return try_in_child(s);
}

int schedule_find_cgroup(struct schedule *s, unsigned index) {
        char name[64];
        group_name(name, sizeof name, getppid(), index);
        return cgroup_wanted(&s->cgroup) ? cgroup_setup(&s->cgroup, name, false) : 0;
}

void schedule_describe(const struct schedule *s, char *buf, size_t size) {
        size_t off = 0;
#define ADD(...)                                                                                  \
        do {                                                                                      \
                if (off < size)                                                                   \
                        off += (size_t) snprintf(buf + off, size - off, "%s", off ? ", " : ""); \
                if (off < size)                                                                   \
                        off += (size_t) snprintf(buf + off, size - off, __VA_ARGS__);             \
        } while (0)
        buf[0] = '\0';
        if (s->has_policy && s->policy == SCHED_DEADLINE)
                ADD("deadline %llu/%llu/%llu ns", (unsigned long long) s->runtime_ns,
                    (unsigned long long) s->deadline_ns, (unsigned long long) s->period_ns);
        else if (s->has_policy)
                ADD("%s%s%.0u", policy_name(s->policy), s->priority ? " " : "", s->priority);
        char cpus[256];
        if (s->has_cpus) {
                cgroup_format_cpus(&s->cpus, cpus, sizeof cpus);
                ADD("cpus %s", cpus);
        }
        if (s->has_nice)
                ADD("nice %d", s->nice);
        if (s->uclamp_min >= 0 || s->uclamp_max >= 0)
                ADD("uclamp %d-%d", s->uclamp_min < 0 ? 0 : s->uclamp_min, s->uclamp_max < 0 ? 1024 : s->uclamp_max);
        if (s->cgroup.has_cpu_max)
                ADD("cpu-max %llu/%llu us", (unsigned long long) s->cgroup.quota_us,
                    (unsigned long long) s->cgroup.period_us);
        if (s->cgroup.has_cpuset) {
                cgroup_format_cpus(&s->cgroup.cpuset, cpus, sizeof cpus);
                ADD("cpuset %s%s", cpus, s->cgroup.exclusive ? " (exclusive)" : "");
        }
#undef ADD
}

int schedules_load(const struct string_list *specs, bool at_start, struct schedule **ret, size_t *ret_n) {
        struct schedule *list = calloc(specs->n ? specs->n : 1, sizeof *list);
        if (!list)
                return log_error("out of memory"), -ENOMEM;
        size_t n = 0;
        int r = 0;
        for (; n < specs->n && r >= 0; n++) {
                struct schedule *s = &list[n];
                if ((r = schedule_parse(specs->items[n], s)) < 0)
                        break;
                char path[PATH_MAX];
                struct stat st;
                if (preload_find_program(s->program, path) < 0 || stat(path, &st) < 0) {
                        r = (log_error("schedule %s: cannot find the program", s->program), -ENOENT);
                        n++;
                        break;
                }
                s->dev = st.st_dev;
                s->ino = st.st_ino;
                if (at_start)
                        r = schedule_check(s, (unsigned) n);
                /* A zygote after SIGHUP reads the configuration again: a schedule added or changed
                 * since the start must not fail at each launch, nor find no cgroup made for it. */
                else if ((r = schedule_find_cgroup(s, (unsigned) n)) < 0)
                        log_error_errno(r, "schedule %s: the daemon made no cgroup for it at its start (a schedule "
                                        "added since takes a restart)", s->program);
                else
                        r = try_in_child(s);
        }
        if (r < 0) {
                if (at_start)
                        schedules_remove_cgroups(list, n);
                schedules_free(list, n);
                return r;
        }
        *ret = list;
        *ret_n = n;
        return 0;
}

void schedules_remove_cgroups(const struct schedule *list, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (cgroup_wanted(&list[i].cgroup))
                        cgroup_remove(&list[i].cgroup);
}

void schedules_free(struct schedule *list, size_t n) {
        for (size_t i = 0; i < n; i++)
                schedule_done(&list[i]);
        free(list);
}

const struct schedule *schedule_for(const struct schedule *list, size_t n, dev_t dev, ino_t ino) {
        for (size_t i = 0; i < n; i++)
                if (list[i].dev == dev && list[i].ino == ino)
                        return &list[i];
        return NULL;
}

static bool read_schedule(pid_t pid, struct kernel_sched_attr *a, int *nice, cpu_set_t *cpus) {
        *a = (struct kernel_sched_attr){ 0 };
        if (syscall(SYS_sched_getattr, pid, a, sizeof *a, 0) < 0 || sched_getaffinity(pid, sizeof *cpus, cpus) < 0)
                return false;
        errno = 0;
        *nice = getpriority(PRIO_PROCESS, (id_t) pid);
        return errno == 0;
}

const char *schedule_difference(pid_t pid) {
        /* Ours is read each time: another process can change it (chrt -p, renice, taskset -p), and so
         * can the CPUs going offline and online, and the children inherit what it is now. */
        struct kernel_sched_attr ours;
        int our_nice;
        cpu_set_t our_cpus;
        if (!read_schedule(0, &ours, &our_nice, &our_cpus))
                return "the daemon's own cannot be read";
        struct kernel_sched_attr theirs;
        int their_nice;
        cpu_set_t their_cpus;
        if (!read_schedule(pid, &theirs, &their_nice, &their_cpus))
                return "its scheduling cannot be read";
        if (theirs.sched_policy != ours.sched_policy || theirs.sched_priority != ours.sched_priority)
                return "its policy or priority (chrt)";
        if (their_nice != our_nice)
                return "its nice value (nice, renice, setpriority)";
        if (theirs.sched_util_min != ours.sched_util_min || theirs.sched_util_max != ours.sched_util_max)
                return "its utilization clamps";
        if (!CPU_EQUAL(&their_cpus, &our_cpus))
                return "its CPU affinity (taskset)";
        if (ours.sched_policy == SCHED_DEADLINE &&
            (theirs.sched_runtime != ours.sched_runtime || theirs.sched_deadline != ours.sched_deadline ||
             theirs.sched_period != ours.sched_period))
                return "its deadline parameters (chrt)";
        return NULL;
}
