/* SPDX-License-Identifier: MIT */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"

/* The leaf a v2 daemon moves itself to, beside its programs' groups. */
#define DAEMON_LEAF "headstartd"

static bool in_list(const char *list, const char *word) {
        size_t n = strlen(word);
        for (const char *p = list; (p = strstr(p, word)); p += n)
                if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0' || p[n] == '\n' || p[n] == ' '))
                        return true;
        return false;
}

/* Where the hierarchy is mounted: v1 with the controller among its options, or v2. */
static int mount_point(const char *controller, bool v2, char *root, char *dir, size_t size) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return -errno;
        char line[4096];
        while (fgets(line, sizeof line, f)) {
                char mroot[PATH_MAX], mdir[PATH_MAX], fstype[64], super[1024];
                const char *dash = strstr(line, " - ");
                if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", mroot, mdir) != 2 ||
                    sscanf(dash + 3, "%63s %*s %1023s", fstype, super) != 2)
                        continue;
                if (v2 ? strcmp(fstype, "cgroup2") == 0 : (strcmp(fstype, "cgroup") == 0 && in_list(super, controller))) {
                        snprintf(root, PATH_MAX, "%s", mroot);
                        snprintf(dir, size, "%s", mdir);
                        return 0;
                }
        }
        return -ENOENT;
}

/* The daemon's own group directory in the hierarchy that has controller. */
static int own_dir(const char *controller, char *dir, size_t size, bool *ret_v2) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
        if (!f)
                return -errno;
        char line[4096], v1_path[PATH_MAX] = "", v2_path[PATH_MAX] = "";
        bool v1 = false, v2 = false;
        while (fgets(line, sizeof line, f)) {
                line[strcspn(line, "\n")] = '\0';
                char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
                if (!b)
                        continue;
                *b = '\0'; /* "0::PATH" is v2; "ID:CONTROLLERS:PATH" v1 */
                if (a[1] == '\0')
                        v2 = true, snprintf(v2_path, sizeof v2_path, "%s", b + 1);
                else if (in_list(a + 1, controller))
                        v1 = true, snprintf(v1_path, sizeof v1_path, "%s", b + 1);
        }
        if (!v1 && !v2)
                return -ENOENT;
        char root[PATH_MAX], mnt[PATH_MAX];
        int r = mount_point(controller, !v1, root, mnt, sizeof mnt);
        if (r < 0)
                return r;
        const char *path = v1 ? v1_path : v2_path;
        if (strcmp(root, "/") != 0 && strncmp(path, root, strlen(root)) == 0)
                path += strlen(root); /* a namespace's view */
        if ((size_t) snprintf(dir, size, "%s%s", mnt, path) >= size)
                return -ENAMETOOLONG;
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
                dir[--n] = '\0';
        if (!v1) {
                /* v2: the controller must be available to our group, and a daemon that moved itself
                 * to its leaf has its programs' groups one level up. */
                char *slash = strrchr(dir, '/');
                if (slash && strcmp(slash + 1, DAEMON_LEAF) == 0)
                        *slash = '\0';
                char file[PATH_MAX + 32], have[256] = "";
                snprintf(file, sizeof file, "%s/cgroup.controllers", dir);
                _cleanup_fclose_ FILE *c = fopen(file, "re");
                if (!c || !fgets(have, sizeof have, c) || !in_list(have, controller))
                        return -EOPNOTSUPP;
        }
        *ret_v2 = !v1;
        return 0;
}

static int write_file(const char *dir, const char *file, const char *value) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s", dir, file);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, value, strlen(value));
        return n < 0 ? -errno : 0;
}

static int read_file(const char *dir, const char *file, char *buf, size_t size) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s", dir, file);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, size - 1);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        return 0;
}

/* v2 allows controllers for children only in a group without processes: the daemon, alone in its
 * delegated group at start, moves to a leaf of its own first. */
static int enable_v2(const char *base, const char *controller) {
        char leaf[PATH_MAX + 16], want[32];
        snprintf(leaf, sizeof leaf, "%s/" DAEMON_LEAF, base);
        if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
                return -errno;
        int r = write_file(leaf, "cgroup.procs", "0");
        if (r < 0)
                return r;
        snprintf(want, sizeof want, "+%s", controller);
        return write_file(base, "cgroup.subtree_control", want);
}

void cgroup_format_cpus(const cpu_set_t *set, char *buf, size_t size) {
        size_t off = 0;
        buf[0] = '\0';
        for (int cpu = 0; cpu < CPU_SETSIZE && off < size; cpu++)
                if (CPU_ISSET(cpu, set))
                        off += (size_t) snprintf(buf + off, size - off, "%s%d", off ? "," : "", cpu);
}

static int group_dir(struct cgroup_limits *l, const char *controller, const char *name, bool create, char *dir,
                     bool *v2) {
        char base[PATH_MAX];
        int r = own_dir(controller, base, sizeof base, v2);
        if (r < 0)
                return r;
        l->v1 = !*v2;
        if ((size_t) snprintf(dir, PATH_MAX, "%s/%s", base, name) >= PATH_MAX)
                return -ENAMETOOLONG;
        if (!create)
                return access(dir, F_OK) < 0 ? -errno : 0;
        if (*v2 && (r = enable_v2(base, controller)) < 0)
                return r;
        return mkdir(dir, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

/* With CONFIG_RT_GROUP_SCHED, a new v1 group has no real-time time at all (cpu.rt_runtime_us 0), and a
 * fifo or rr task cannot join it: the same share of each real-time period as of each CFS one, within
 * what the parent has. */
static int give_rt_budget(struct cgroup_limits *l) {
        char value[64], parent[PATH_MAX];
        if (read_file(l->cpu_dir, "cpu.rt_period_us", value, sizeof value) < 0)
                return 0; /* no RT group scheduling: nothing to give */
        unsigned long long rt_period = strtoull(value, NULL, 10);
        snprintf(parent, sizeof parent, "%s", l->cpu_dir);
        *strrchr(parent, '/') = '\0';
        int r = read_file(parent, "cpu.rt_runtime_us", value, sizeof value);
        if (r < 0)
                return r;
        unsigned long long most = strtoull(value, NULL, 10);
        unsigned long long share = l->quota_us ? l->quota_us * rt_period / l->period_us : most;
        snprintf(value, sizeof value, "%llu", share < most ? share : most);
        return write_file(l->cpu_dir, "cpu.rt_runtime_us", value);
}

static int setup_cpu(struct cgroup_limits *l, const char *name, bool create) {
        bool v2;
        int r = group_dir(l, "cpu", name, create, l->cpu_dir, &v2);
        if (r < 0 || !create)
                return r;
        char value[64];
        if (v2) {
                if (l->quota_us)
                        snprintf(value, sizeof value, "%llu %llu", (unsigned long long) l->quota_us,
                                 (unsigned long long) l->period_us);
                else
                        snprintf(value, sizeof value, "max %llu", (unsigned long long) l->period_us);
                return write_file(l->cpu_dir, "cpu.max", value);
        }
        snprintf(value, sizeof value, "%llu", (unsigned long long) l->period_us);
        if ((r = write_file(l->cpu_dir, "cpu.cfs_period_us", value)) < 0)
                return r;
        snprintf(value, sizeof value, "%lld", l->quota_us ? (long long) l->quota_us : -1LL);
        if ((r = write_file(l->cpu_dir, "cpu.cfs_quota_us", value)) < 0)
                return r;
        return l->realtime ? give_rt_budget(l) : 0;
}

static int setup_cpuset(struct cgroup_limits *l, const char *name, bool create) {
        bool v2;
        char state[64] = "";
        int r = group_dir(l, "cpuset", name, create, l->cpuset_dir, &v2);
        if (r < 0)
                return r;
        if (!create) { /* as the supervisor left it */
                l->exclusive = v2 ? read_file(l->cpuset_dir, "cpuset.cpus.partition", state, sizeof state) == 0 &&
                                            strcmp(state, "root") == 0
                                  : read_file(l->cpuset_dir, "cpuset.cpu_exclusive", state, sizeof state) == 0 &&
                                            strcmp(state, "1") == 0;
                return 0;
        }
        char cpus[CPU_SETSIZE * 5], mems[256] = "";
        cgroup_format_cpus(&l->cpuset, cpus, sizeof cpus);
        if (!v2) {
                /* A new v1 cpuset has no memory nodes: those of the parent. */
                char parent[PATH_MAX];
                snprintf(parent, sizeof parent, "%s", l->cpuset_dir);
                *strrchr(parent, '/') = '\0';
                if ((r = read_file(parent, "cpuset.mems", mems, sizeof mems)) < 0 ||
                    (r = write_file(l->cpuset_dir, "cpuset.mems", mems)) < 0)
                        return r;
        }
        if ((r = write_file(l->cpuset_dir, "cpuset.cpus", cpus)) < 0)
                return r == -EINVAL ? -EXDEV : r; /* told apart from other errors in schedule.c's hint */
        /* Exclusive where the kernel allows: a v2 partition takes its CPUs from every other group,
         * a v1 cpu_exclusive set keeps its siblings off them. Otherwise it only confines. */
        if (v2) {
                l->exclusive = write_file(l->cpuset_dir, "cpuset.cpus.partition", "root") == 0 &&
                               read_file(l->cpuset_dir, "cpuset.cpus.partition", state, sizeof state) == 0 &&
                               strcmp(state, "root") == 0;
                if (!l->exclusive)
                        (void) write_file(l->cpuset_dir, "cpuset.cpus.partition", "member");
        } else {
                l->exclusive = write_file(l->cpuset_dir, "cpuset.cpu_exclusive", "1") == 0;
        }
        return 0;
}

int cgroup_setup(struct cgroup_limits *l, const char *name, bool create) {
        int r = 0;
        if (l->has_cpu_max && (r = setup_cpu(l, name, create)) < 0)
                return r;
        if (l->has_cpuset && (r = setup_cpuset(l, name, create)) < 0)
                return r;
        return 0;
}

void cgroup_remove(const struct cgroup_limits *l) {
        if (l->has_cpu_max)
                (void) rmdir(l->cpu_dir);
        if (l->has_cpuset && strcmp(l->cpuset_dir, l->cpu_dir) != 0)
                (void) rmdir(l->cpuset_dir);
}

int cgroup_join(const struct cgroup_limits *l, pid_t pid) {
        char value[32];
        snprintf(value, sizeof value, "%d", (int) pid);
        /* On v1, a process moving itself, with one thread, goes through `tasks`: the kernel then
         * skips the lock that keeps a whole thread group still, whose RCU grace period took 5 ms
         * here, 15 ms with every CPU busy, at each launch. cgroup.procs for anyone else. */
        const char *file = l->v1 && pid == 0 ? "tasks" : "cgroup.procs";
        int r = 0;
        if (l->has_cpu_max && (r = write_file(l->cpu_dir, file, value)) < 0)
                return r;
        if (l->has_cpuset && strcmp(l->cpuset_dir, l->cpu_dir) != 0)
                r = write_file(l->cpuset_dir, file, value);
        return r;
}
