/* SPDX-License-Identifier: MIT */
#include "process-state.h"

#include <dirent.h>
#include <fcntl.h>
#include <locale.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "fp-control.h"

#define MAX_FDS 4096
#define MAX_TEXT 4096

struct process_state {
        uintptr_t handlers[NSIG];
        int flags[NSIG];
        sigset_t mask;
        mode_t umask;
        dev_t cwd_dev, root_dev;
        ino_t cwd_ino, root_ino;
        struct rlimit limits[RLIM_NLIMITS];
        unsigned char fds[MAX_FDS / 8];
        struct itimerval real, virt, prof;
        struct timespec at;
        int prctls[6];
        int priority, policy, persona;
        cpu_set_t cpus;
        char locale[256];
        uint64_t fp_control;
        char status[MAX_TEXT]; /* /proc/self/status' lines about IDs, capabilities, confinement */
        char timers[MAX_TEXT]; /* /proc/self/timers: POSIX timers */
};

static void sentinel(int sig) {
        (void) sig;
}

void process_state_neutral(void) {
        for (int sig = 1; sig < NSIG; sig++) {
                bool fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP ||
                             sig == SIGSYS || sig == SIGABRT || sig == SIGALRM;
                struct sigaction sa = { .sa_handler = fault ? SIG_DFL : sentinel, .sa_flags = fault ? 0 : SA_RESTART };
                (void) sigaction(sig, &sa, NULL); /* SIGKILL, SIGSTOP and glibc's own refuse: fine */
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        umask(0325);
}

static void read_text(const char *path, char *buf, size_t size, const char *const *keep) {
        buf[0] = '\0';
        FILE *f = fopen(path, "re");
        if (!f)
                return;
        char line[512];
        size_t n = 0;
        while (fgets(line, sizeof line, f)) {
                bool wanted = !keep;
                for (size_t i = 0; keep && keep[i]; i++)
                        if (strncmp(line, keep[i], strlen(keep[i])) == 0)
                                wanted = true;
                size_t len = strlen(line);
                if (wanted && n + len < size) {
                        memcpy(buf + n, line, len + 1);
                        n += len;
                }
        }
        fclose(f);
}

static const char *const STATUS_LINES[] = { "Uid:", "Gid:", "Groups:", "NoNewPrivs:", "Seccomp:", "Cap", NULL };

static void take(struct process_state *s) {
        memset(s, 0, sizeof *s);
        for (int sig = 1; sig < NSIG; sig++) {
                struct sigaction sa;
                if (sigaction(sig, NULL, &sa) == 0) {
                        s->handlers[sig] = (uintptr_t) sa.sa_handler;
                        s->flags[sig] = sa.sa_flags;
                }
        }
        sigprocmask(SIG_BLOCK, NULL, &s->mask);
        s->umask = umask(0);
        umask(s->umask);
        struct stat st;
        if (stat(".", &st) == 0) {
                s->cwd_dev = st.st_dev;
                s->cwd_ino = st.st_ino;
        }
        if (stat("/", &st) == 0) {
                s->root_dev = st.st_dev;
                s->root_ino = st.st_ino;
        }
        for (int i = 0; i < RLIM_NLIMITS; i++)
                (void) getrlimit(i, &s->limits[i]);
        DIR *d = opendir("/proc/self/fd");
        if (d) {
                int own = dirfd(d);
                struct dirent *de;
                while ((de = readdir(d))) {
                        int fd = atoi(de->d_name);
                        if (de->d_name[0] != '.' && fd != own && fd >= 0 && fd < MAX_FDS)
                                s->fds[fd / 8] |= (unsigned char) (1u << (fd % 8));
                }
                closedir(d);
        }
        clock_gettime(CLOCK_MONOTONIC, &s->at);
        getitimer(ITIMER_REAL, &s->real);
        getitimer(ITIMER_VIRTUAL, &s->virt);
        getitimer(ITIMER_PROF, &s->prof);
        s->prctls[0] = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
        s->prctls[1] = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
        (void) prctl(PR_GET_PDEATHSIG, &s->prctls[2], 0, 0, 0);
        (void) prctl(PR_GET_CHILD_SUBREAPER, &s->prctls[3], 0, 0, 0);
        s->prctls[4] = prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0);
        s->prctls[5] = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
        s->priority = getpriority(PRIO_PROCESS, 0);
        s->policy = sched_getscheduler(0);
        (void) sched_getaffinity(0, sizeof s->cpus, &s->cpus);
        s->persona = personality(0xffffffff);
        const char *l = setlocale(LC_ALL, NULL);
        snprintf(s->locale, sizeof s->locale, "%s", l ? l : "");
        s->fp_control = hs_fp_control();
        read_text("/proc/self/status", s->status, sizeof s->status, STATUS_LINES);
        read_text("/proc/self/timers", s->timers, sizeof s->timers, NULL);
}

struct process_state *process_state_take(void) {
        struct process_state *s = malloc(sizeof *s);
        if (s)
                take(s);
        return s;
}

static long long usec(const struct timeval *t) {
        return (long long) t->tv_sec * 1000000 + t->tv_usec;
}

/* The real timer runs down on its own (a throwaway child has its deadline there): changed when it
 * is now later, or earlier by more than the time that passed. The others run only with the CPU. */
static bool timers_changed(const struct process_state *a, const struct process_state *b) {
        long long passed =
                ((long long) (b->at.tv_sec - a->at.tv_sec) * 1000000000 + (b->at.tv_nsec - a->at.tv_nsec)) / 1000;
        long long before = usec(&a->real.it_value), after = usec(&b->real.it_value);
        if (usec(&a->real.it_interval) != usec(&b->real.it_interval) || (before == 0) != (after == 0) ||
            after > before || after < before - passed - 100000)
                return true;
        return usec(&a->virt.it_interval) != usec(&b->virt.it_interval) ||
               (usec(&a->virt.it_value) == 0) != (usec(&b->virt.it_value) == 0) ||
               usec(&a->prof.it_interval) != usec(&b->prof.it_interval) ||
               (usec(&a->prof.it_value) == 0) != (usec(&b->prof.it_value) == 0) ||
               strcmp(a->timers, b->timers) != 0;
}

const char *process_state_changed(const struct process_state *s) {
        struct process_state *now = process_state_take();
        if (!now)
                return "out of memory";
        const char *what = NULL;
        for (int sig = 1; sig < NSIG && !what; sig++)
                if (s->handlers[sig] != now->handlers[sig] || s->flags[sig] != now->flags[sig])
                        what = "a signal's disposition";
        if (!what && memcmp(&s->mask, &now->mask, sizeof s->mask) != 0)
                what = "the signal mask";
        else if (!what && s->umask != now->umask)
                what = "the umask";
        else if (!what && (s->cwd_dev != now->cwd_dev || s->cwd_ino != now->cwd_ino || s->root_dev != now->root_dev ||
                           s->root_ino != now->root_ino))
                what = "the working or root directory";
        else if (!what && memcmp(s->limits, now->limits, sizeof s->limits) != 0)
                what = "a resource limit";
        else if (!what && memcmp(s->fds, now->fds, sizeof s->fds) != 0)
                what = "the open file descriptors";
        else if (!what && timers_changed(s, now))
                what = "a timer of the process";
        else if (!what && (memcmp(s->prctls, now->prctls, sizeof s->prctls) != 0 || s->persona != now->persona))
                what = "a process attribute (prctl, personality)";
        else if (!what && (s->priority != now->priority || s->policy != now->policy ||
                           !CPU_EQUAL(&s->cpus, &now->cpus)))
                what = "the scheduling";
        else if (!what && strcmp(s->locale, now->locale) != 0)
                what = "the C library's locale";
        else if (!what && s->fp_control != now->fp_control)
                what = "the floating-point environment (flush-to-zero, rounding: -ffast-math)";
        else if (!what && strcmp(s->status, now->status) != 0)
                what = "the process's IDs, capabilities or confinement";
        process_state_free(now);
        return what;
}

void process_state_free(struct process_state *s) {
        free(s);
}
