/* SPDX-License-Identifier: MIT */
#include "client-context.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kept-prctl.h"
#include "macro.h"
#include "schedule.h"

#define IOPRIO_WHO_PROCESS 1 /* linux/ioprio.h, which glibc does not wrap */

#define IDS "the client's user or group IDs or supplementary groups differ from the daemon's (setpriv, sg, newgrp)"
#define CAPABILITIES "the client's capabilities differ from the daemon's (setpriv, capsh)"
#define CONFINED "the client is confined otherwise than the daemon (no_new_privs or a seccomp filter)"
#define SPECULATION "the client's speculation mitigations differ from the daemon's (prctl PR_SET_SPECULATION_CTRL, " \
                    "which exec keeps)"

/* The lines of /proc/PID/status that say what the process may do, compared as text, and what a
 * difference in each means. */
static const struct {
        const char *key, *why;
} status_lines[] = {
        { "Uid:", IDS },
        { "Gid:", IDS },
        { "Groups:", IDS },
        { "CapInh:", CAPABILITIES },
        { "CapPrm:", CAPABILITIES },
        { "CapEff:", CAPABILITIES },
        { "CapBnd:", CAPABILITIES },
        { "CapAmb:", CAPABILITIES },
        { "NoNewPrivs:", CONFINED },
        { "Seccomp:", CONFINED },
        { "Seccomp_filters:", CONFINED },
        { "Speculation_Store_Bypass:", SPECULATION },
        { "SpeculationIndirectBranch:", SPECULATION },
        { "THP_enabled:", "the client's transparent huge pages are disabled otherwise than the daemon's "
                          "(prctl PR_SET_THP_DISABLE, which exec keeps)" },
};
static const char *const namespaces[] = { "cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts" };

#define VALUE_MAX 512

/* Where a process's root directory is (chroot): the directory, and the mount it is reached through
 * (0 where the kernel does not say), for a chroot into a bind mount of another mount's directory. */
struct root {
        dev_t dev;
        ino_t ino;
        uint64_t mnt_id;
};

struct context {
        char status[ELEMENTSOF(status_lines)][VALUE_MAX]; /* "" where the kernel has no such line */
        ino_t ns[ELEMENTSOF(namespaces)];                /* 0 where the kernel has no such namespace */
        struct root root;
        bool traced; /* TracerPid: not 0 */
        char personality[32];
        char coredump_filter[32];
        char oom_score_adj[OOM_SCORE_MAX];
        long ioprio;
};

/* The first line of the file, without its newline; false when it cannot be read. */
static bool read_line(const char *path, char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f || !fgets(buf, (int) size, f))
                return false;
        buf[strcspn(buf, "\n")] = '\0';
        return true;
}

static bool read_status(const char *proc, struct context *c) {
        char path[64], line[VALUE_MAX];
        snprintf(path, sizeof path, "%s/status", proc);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return false;
        while (fgets(line, sizeof line, f)) {
                /* An ended process (a zombie its parent has not reaped) has no memory or namespaces
                 * left to compare: it is gone. */
                if (strncmp(line, "State:\tZ", strlen("State:\tZ")) == 0)
                        return false;
                if (strncmp(line, "TracerPid:", strlen("TracerPid:")) == 0)
                        c->traced = strtol(line + strlen("TracerPid:"), NULL, 10) != 0;
                for (size_t i = 0; i < ELEMENTSOF(status_lines); i++)
                        if (strncmp(line, status_lines[i].key, strlen(status_lines[i].key)) == 0)
                                snprintf(c->status[i], VALUE_MAX, "%s", line + strlen(status_lines[i].key));
        }
        return c->status[0][0] != '\0'; /* every kernel has Uid: */
}

static bool kernel_has_namespace(const char *kind) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/ns/%s", kind);
        return access(path, F_OK) == 0;
}

static bool read_namespaces(const char *proc, struct context *c) {
        for (size_t i = 0; i < ELEMENTSOF(namespaces); i++) {
                char path[64];
                struct stat st;
                snprintf(path, sizeof path, "%s/ns/%s", proc, namespaces[i]);
                if (stat(path, &st) == 0)
                        c->ns[i] = st.st_ino;
                else if (errno != ENOENT || !kernel_has_namespace(namespaces[i]))
                        return false; /* ENOENT where we have one: a process that has ended (a zombie) */
        }
        return true;
}

/* A chroot is not a namespace: a client chrooted in the daemon's mount namespace has the same
 * namespaces, and a served program would see the daemon's files, not the client's. */
static bool read_root(const char *proc, struct root *ret) {
        char path[64];
        struct statx stx;
        snprintf(path, sizeof path, "%s/root", proc);
        /* Without asking its file system: a client chrooted into a FUSE mount it serves itself
         * would otherwise hold the zygote in the GETATTR it never answers. Device, inode and mount
         * are known without it. */
        if (statx(AT_FDCWD, path, AT_STATX_DONT_SYNC, STATX_INO | STATX_MNT_ID, &stx) < 0) {
                struct stat st; /* a sandbox that has no statx (ENOSYS): without the mount */
                if (errno != ENOSYS || stat(path, &st) < 0)
                        return false;
                *ret = (struct root){ .dev = st.st_dev, .ino = st.st_ino };
                return true;
        }
        *ret = (struct root){ .dev = makedev(stx.stx_dev_major, stx.stx_dev_minor),
                              .ino = stx.stx_ino,
                              .mnt_id = (stx.stx_mask & STATX_MNT_ID) ? stx.stx_mnt_id : 0 };
        return true;
}

static bool read_context(pid_t pid, struct context *c) {
        char proc[32], path[64];
        *c = (struct context){ 0 };
        snprintf(proc, sizeof proc, "/proc/%d", (int) pid);
        c->ioprio = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, pid);
        snprintf(path, sizeof path, "%s/personality", proc);
        bool ok = read_line(path, c->personality, sizeof c->personality);
        snprintf(path, sizeof path, "%s/coredump_filter", proc);
        ok = ok && read_line(path, c->coredump_filter, sizeof c->coredump_filter);
        snprintf(path, sizeof path, "%s/oom_score_adj", proc);
        return ok && read_line(path, c->oom_score_adj, sizeof c->oom_score_adj) && c->ioprio >= 0 &&
               read_status(proc, c) && read_namespaces(proc, c) && read_root(proc, &c->root);
}

/* a: the client's; b: ours. */
static const char *difference(const struct context *a, const struct context *b) {
        /* A tracer (strace -f, gdb, ltrace) follows the program exec'd by its tracee; a served one
         * would escape it. A traced daemon does not stop its untraced clients from being served. */
        if (a->traced)
                return "the client is traced (strace, gdb), and its tracer would not see a served program";
        for (size_t i = 0; i < ELEMENTSOF(status_lines); i++)
                if (strcmp(a->status[i], b->status[i]) != 0)
                        return status_lines[i].why;
        for (size_t i = 0; i < ELEMENTSOF(namespaces); i++)
                if (a->ns[i] != b->ns[i])
                        return "the client is in other namespaces than the daemon (unshare, a container, a "
                               "sandbox)";
        if (a->root.dev != b->root.dev || a->root.ino != b->root.ino || a->root.mnt_id != b->root.mnt_id)
                return "the client's root directory differs from the daemon's (chroot), and a served program "
                       "would see the daemon's files";
        if (strcmp(a->personality, b->personality) != 0)
                return "the client's execution domain differs from the daemon's (setarch)";
        /* Which mappings a core dump holds: fork and exec keep it, and so would the zygote's child. */
        if (strcmp(a->coredump_filter, b->coredump_filter) != 0)
                return "the client's core dump filter differs from the daemon's (/proc/self/coredump_filter)";
        if (a->ioprio != b->ioprio)
                return "the client's I/O priority differs from the daemon's (ionice)";
        return NULL;
}

/* What the zygote's children inherit from it by fork and a client's program under exec would not
 * have (kept-prctl.h: MDWE from a service manager's MemoryDenyWriteExecute=...): it would be given to
 * every program, so every launch is declined. Worded once, into a static buffer. */
static const char *own_prctl_state(void) {
        static char why[256];
        const char *kept = kept_prctl_inherited();
        if (!kept)
                return NULL;
        snprintf(why, sizeof why, "the daemon %s, which its programs would inherit", kept);
        return why;
}

const char *client_context_refusal(pid_t pid, int pidfd, char ret_oom_score[OOM_SCORE_MAX]) {
        /* The zygote's own is read once, but for what another process changes as a matter of course
         * (ionice -p, choom -p), which its children would inherit: nothing else changes it, and this
         * is on every launch. (A core dump filter written into the zygote's /proc file after it
         * started is not followed.) */
        static struct context ours;
        static bool known;
        static const char *own_state;
        ret_oom_score[0] = '\0';
        if (!known) {
                if (!read_context(getpid(), &ours))
                        return "the daemon cannot read its own rights and namespaces";
                own_state = own_prctl_state();
                known = true;
        }
        if (own_state)
                return own_state;
        ours.ioprio = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0);
        (void) read_line("/proc/self/oom_score_adj", ours.oom_score_adj, sizeof ours.oom_score_adj);
        struct context theirs;
        if (pidfd < 0 || !read_context(pid, &theirs) || pidfd_send_signal(pidfd, 0, NULL, 0) < 0)
                return "the client's rights and namespaces cannot be read (a process that is not "
                       "dumpable, or gone)";
        if (strcmp(theirs.oom_score_adj, ours.oom_score_adj) != 0)
                snprintf(ret_oom_score, OOM_SCORE_MAX, "%s", theirs.oom_score_adj);
        return difference(&theirs, &ours);
}

void client_context_give_oom_score(pid_t child, const char *oom_score) {
        char path[64];
        if (!oom_score[0])
                return;
        snprintf(path, sizeof path, "/proc/%d/oom_score_adj", (int) child);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, oom_score, strlen(oom_score)) < 0)
                return; /* below the zygote's floor (EACCES): it keeps the zygote's */
}

bool client_context_inherited_unchanged(pid_t child) {
        char path[64], ours[OOM_SCORE_MAX], theirs[OOM_SCORE_MAX];
        snprintf(path, sizeof path, "/proc/%d/oom_score_adj", (int) child);
        return !schedule_difference(child) &&
               syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, child) == syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0) &&
               read_line("/proc/self/oom_score_adj", ours, sizeof ours) && read_line(path, theirs, sizeof theirs) &&
               strcmp(ours, theirs) == 0;
}
