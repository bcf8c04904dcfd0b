/* SPDX-License-Identifier: MIT */
#include "supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control.h"
#include "launch-counts.h"
#include "clock.h"
#include "signals.h"
#include "log.h"
#include "proc-stat.h"
#include "macro.h"
#include "systemd.h"
#include "wire.h"

enum zygote_state { STARTING, SERVING, RETIRING };

struct zygote;

struct zwatch {
        bool control; /* else the pidfd */
        struct zygote *z; /* NULL: the signalfd, or (listen) the socket */
        bool listen;
};

/* Starting a zygote can fail for want of resources (fork's EAGAIN at RLIMIT_NPROC, ENOMEM): tried
 * again after a pause that doubles up to a limit, while clients are declined (they exec). */
#define RETRY_FIRST_MS 100u
#define RETRY_MAX_MS 10000u
/* The serving zygote is asked whether its loop still turns this often, and is taken for hung when
 * it has not answered this long and used no CPU meanwhile (one copying a large program from slow
 * storage, or waiting for a CPU, is not hung). */
#define PING_EVERY_MS 2000u
#define HUNG_AFTER_MS 10000u

struct zygote {
        struct zygote *next;
        pid_t pid;
        int pidfd, control_fd;
        unsigned generation;
        enum zygote_state state;
        bool ended; /* reaped; freed after the current batch of events, which may still name it */
        uint64_t pinged_ms;         /* CLOCK_MONOTONIC ms of the ping not answered yet, 0: none */
        unsigned long long pinged_cpu; /* its CPU time then, in clock ticks */
        struct zwatch pid_watch, control_watch;
};

struct supervisor {
        const struct daemon_options *o;
        char **argv;
        const char *socket_path;
        int listen_fd, epoll_fd, signal_fd;
        int learned_fd; /* a memfd: what the zygotes learned, kept here when it cannot be saved (learn.h) */
        int counts_fd;  /* a memfd: the launch counts of every zygote (launch-counts.h) */
        struct zygote *zygotes;
        unsigned generation;
        bool announced;      /* the first zygote became ready */
        bool stopping;
        bool stop_requested; /* by a signal, not because the first zygote failed */
        bool failed;         /* a zygote ended badly: our exit status says so */
        uint64_t refresh_at; /* CLOCK_MONOTONIC ms, 0: none */
        uint64_t retry_at;   /* starting a zygote failed: try again then (ms), 0: none */
        uint64_t ping_at;    /* the serving zygote is pinged then (ms) */
        unsigned retry_ms;   /* the pause before the next try */
        char retry_reason[128];
        bool declining;      /* no zygote serves: we accept and decline, so that clients exec now */
        struct zwatch signal_watch, listen_watch;
};

static struct zygote *find(const struct supervisor *s, enum zygote_state state) {
        for (struct zygote *z = s->zygotes; z; z = z->next)
                if (z->state == state && !z->ended)
                        return z;
        return NULL;
}

static int watch(struct supervisor *s, int fd, struct zwatch *w) {
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = w };
        return epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* Runs in the forked child: exec a fresh headstartd with our arguments plus where its socket and
 * channel are (without close-on-exec, at numbers it is told). */
static _Noreturn void exec_zygote(const struct supervisor *s, int control_fd, const char *reason) {
        int listen_copy = fcntl(s->listen_fd, F_DUPFD, 3);
        int control_copy = fcntl(control_fd, F_DUPFD, 3);
        int learned_copy = s->learned_fd >= 0 ? fcntl(s->learned_fd, F_DUPFD, 3) : -1;
        int counts_copy = s->counts_fd >= 0 ? fcntl(s->counts_fd, F_DUPFD, 3) : -1;
        size_t n = 0;
        while (s->argv[n])
                n++;
        char **argv = calloc(n + 3, sizeof *argv);
        if (listen_copy < 0 || control_copy < 0 || !argv)
                _exit(127);
        memcpy(argv, s->argv, n * sizeof *argv);
        argv[n] = "--zygote";
        if (asprintf(&argv[n + 1], "%d,%d,%d,%d,%u,%s", listen_copy, control_copy, learned_copy, counts_copy,
                     s->generation + 1, reason) < 0)
                _exit(127);
        /* SIGTERM, SIGINT and SIGHUP stay blocked across exec until the zygote reads them from its
         * signalfd: a stop request during its preload waits instead of killing it. SIGCHLD, ours
         * alone, does not. */
        sigset_t child;
        sigemptyset(&child);
        sigaddset(&child, SIGCHLD);
        sigprocmask(SIG_UNBLOCK, &child, NULL);
        /* Our own file, even if a newer headstartd has been installed over it since. */
        execv("/proc/self/exe", argv);
        log_error_errno(errno, "cannot start a zygote");
        _exit(127);
}

/* Returns 0, or a negative errno when no zygote could be started (nothing is left behind). */
static int start_zygote(struct supervisor *s, const char *reason) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid == 0)
                exec_zygote(s, sv[1], reason);
        int e = errno;
        close(sv[1]);
        struct zygote *z = pid > 0 ? calloc(1, sizeof *z) : NULL;
        int pidfd = z ? pidfd_open(pid, 0) : -1;
        if (pidfd < 0) {
                e = pid < 0 ? e : errno;
                close(sv[0]);
                if (pid > 0) {
                        kill(pid, SIGKILL);
                        (void) waitpid(pid, NULL, 0);
                }
                free(z);
                return -e;
        }
        *z = (struct zygote){
                .pid = pid,
                .pidfd = pidfd,
                .control_fd = sv[0],
                .generation = ++s->generation,
                .state = STARTING,
                .pid_watch = { .control = false, .z = z },
                .control_watch = { .control = true, .z = z },
                .next = s->zygotes,
        };
        s->zygotes = z;
        if (watch(s, pidfd, &z->pid_watch) < 0 || watch(s, z->control_fd, &z->control_watch) < 0)
                log_error_errno(errno, "epoll_ctl"); /* the zygote still serves; we just lose track */
        if (z->generation > 1)
                log_info("starting zygote %u (pid %d): %s", z->generation, (int) pid, reason);
        return 0;
}

static void decline_clients(struct supervisor *s, bool on);

/* Starting a zygote failed: again after a pause that doubles, clients declined meanwhile. */
static void retry_later(struct supervisor *s, const char *reason) {
        s->retry_ms = s->retry_ms ? (s->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : s->retry_ms * 2) : RETRY_FIRST_MS;
        s->retry_at = now_ms() + s->retry_ms;
        snprintf(s->retry_reason, sizeof s->retry_reason, "%s", reason);
        if (!find(s, SERVING))
                decline_clients(s, true);
}

static void spawn(struct supervisor *s, const char *reason) {
        if (find(s, STARTING) || s->listen_fd < 0)
                return; /* one is on its way already, and it loads the files as they are now */
        int r = start_zygote(s, reason);
        if (r >= 0) {
                s->retry_at = 0;
                return;
        }
        retry_later(s, reason);
        log_error_errno(r, "cannot start a zygote; trying again in %u ms, clients exec meanwhile", s->retry_ms);
}

static void refresh(struct supervisor *s, const char *reason) {
        if (!s->stopping)
                spawn(s, reason);
}

/* While no zygote serves (the serving one died and its successor cannot start yet), connections
 * would wait in the backlog until their clients give up: we take them and decline at once. */
static void decline_clients(struct supervisor *s, bool on) {
        if (on == s->declining || s->listen_fd < 0)
                return;
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &s->listen_watch };
        if (epoll_ctl(s->epoll_fd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, s->listen_fd, &ev) == 0)
                s->declining = on;
}

static void on_listen(struct supervisor *s) {
        for (;;) {
                int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0)
                        return; /* EAGAIN: a zygote took it, or none is left */
                (void) hs_send_reason(fd, HS_MSG_DECLINED, HS_DECLINE_BUSY,
                                      s->retry_at    ? "no zygote is running: starting one failed, and is tried again"
                                      : s->announced ? "no zygote serves yet: a new one is starting"
                                                     : "the daemon is starting (--exec-while-starting)");
                close(fd);
        }
}

static void zygote_free(struct supervisor *s, struct zygote *z) {
        for (struct zygote **p = &s->zygotes; *p; p = &(*p)->next)
                if (*p == z) {
                        *p = z->next;
                        break;
                }
        (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, z->pidfd, NULL);
        close(z->pidfd);
        if (z->control_fd >= 0) {
                (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, z->control_fd, NULL);
                close(z->control_fd);
        }
        free(z);
}

static void on_ready(struct supervisor *s, struct zygote *z) {
        if (z->state != STARTING || s->stopping)
                return; /* ready as the stop came: it finishes as a serving one does */
        struct zygote *old = find(s, SERVING);
        z->state = SERVING;
        s->retry_ms = 0;
        decline_clients(s, false);
        if (old) {
                old->state = RETIRING;
                (void) control_send(old->control_fd, CONTROL_RETIRE);
                log_info("zygote %u serves; zygote %u finishes its programs and exits", z->generation,
                         old->generation);
        } else if (s->announced) {
                /* after a time without one (clients exec'd): the zygote's own "ready" comes before this */
                log_info("zygote %u serves: clients are served again", z->generation);
        }
        if (s->o->refresh_seconds)
                s->refresh_at = now_ms() + (uint64_t) s->o->refresh_seconds * 1000u;
        if (!s->announced) {
                s->announced = true;
                log_info("ready: listening on %s (pid %d)", s->socket_path, (int) getpid());
                (void) systemd_notify("READY=1\nSTATUS=Serving launches");
        }
}

static void on_control(struct supervisor *s, struct zygote *z) {
        char msg[CONTROL_MAX];
        ssize_t n = control_recv(z->control_fd, msg);
        if (n == -EAGAIN)
                return;
        if (n <= 0) { /* it is ending; its pidfd will say when */
                (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, z->control_fd, NULL);
                close(z->control_fd);
                z->control_fd = -1;
                return;
        }
        if (strcmp(msg, CONTROL_READY) == 0)
                on_ready(s, z);
        else if (strcmp(msg, CONTROL_PONG) == 0)
                z->pinged_ms = 0;
        else if (strncmp(msg, CONTROL_REFRESH, strlen(CONTROL_REFRESH)) == 0 && z->state == SERVING)
                refresh(s, msg + strlen(CONTROL_REFRESH));
        else if (strcmp(msg, CONTROL_LEAVING) == 0 && z->state == SERVING) {
                z->state = RETIRING; /* it finishes its programs; clients are declined until one serves */
                decline_clients(s, true);
                refresh(s, "the serving zygote was stopped by a signal");
        }
}

static void on_exit_of(struct supervisor *s, struct zygote *z) {
        siginfo_t si = { 0 };
        if (waitid(P_PIDFD, (id_t) z->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
                return;
        /* A zygote still starting ends at once by SIGTERM (signals.h), ours or one sent to every
         * headstartd (pkill) before we read ours: a stop, not a crash. */
        bool ended_by_stop = z->state == STARTING && si.si_code == CLD_KILLED && si.si_status == SIGTERM;
        bool clean = (si.si_code == CLD_EXITED && si.si_status == 0) || ended_by_stop;
        if (!clean)
                s->failed = true;
        if (ended_by_stop)
                log_info("zygote %u (pid %d) was still starting: SIGTERM ended it", z->generation, (int) z->pid);
        else if (z->state == RETIRING || (s->stopping && clean))
                log_info("zygote %u (pid %d) has ended", z->generation, (int) z->pid);
        else if (!s->announced)
                ; /* the first zygote said why it could not start; that is the one line to read */
        else
                log_error("zygote %u (pid %d) %s %d", z->generation, (int) z->pid,
                          si.si_code == CLD_EXITED ? "exited with status" : "was killed by signal", si.si_status);
        z->ended = true;
        if (s->stopping || z->state == RETIRING)
                return;
        if (!s->announced) {
                s->stopping = true; /* the first zygote failed: nothing to serve with */
                return;
        }
        if (!find(s, SERVING))
                decline_clients(s, true);
        if (z->state == SERVING)
                refresh(s, "the serving zygote ended");
        else if (!find(s, SERVING)) { /* its successor failed too (its configuration, say): not in a loop */
                retry_later(s, "the serving zygote ended");
                log_error("no zygote serves; starting one again in %u ms, clients exec meanwhile", s->retry_ms);
        }
}

/* Each zygote stops accepting, finishes the programs it started (their clients learn how each ended
 * from it) and exits on its own; we exit at once. A service manager's stop or restart must neither
 * wait for programs that run for hours (a home screen) nor kill them, as it would kill none that
 * were exec'd: the units' KillMode=process leaves them be. */
static void stop(struct supervisor *s) {
        s->stopping = s->stop_requested = true;
        log_info("stopping: the zygotes finish their programs on their own");
        /* New clients must find no one listening and exec, not wait in the backlog. The zygotes hold
         * the socket too: our epoll would keep watching it if we did. */
        decline_clients(s, false);
        close(s->listen_fd);
        s->listen_fd = -1;
        for (struct zygote *z = s->zygotes; z; z = z->next)
                (void) pidfd_send_signal(z->pidfd, SIGTERM, NULL, 0);
}

static bool is_zygote(const struct supervisor *s, pid_t pid) {
        for (const struct zygote *z = s->zygotes; z; z = z->next)
                if (z->pid == pid && !z->ended)
                        return true;
        return false;
}

/* Programs whose zygote died are ours (a subreaper): reaped as they end, so that their pidfds,
 * which their clients hold, carry their exit status (headstart-run reads it from there) and no
 * zombie stays. A zygote is left to on_exit_of, through its pidfd. */
static void reap_orphans(const struct supervisor *s) {
        for (;;) {
                siginfo_t si = { 0 };
                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0 || is_zygote(s, si.si_pid))
                        return;
                (void) waitid(P_PID, (id_t) si.si_pid, &si, WEXITED | WNOHANG);
        }
}

/* A stopped zygote answers no one: its clients would wait for their deadline and exec. Any process
 * of the user can stop it (a served program only has to SIGSTOP its parent), and SIGSTOP cannot be
 * blocked, so we, its parent, are told (SIGCHLD) and continue it at once. */
static void continue_stopped(const struct supervisor *s) {
        for (const struct zygote *z = s->zygotes; z; z = z->next) {
                siginfo_t si = { 0 };
                if (z->ended || waitid(P_PIDFD, (id_t) z->pidfd, &si, WSTOPPED | WNOHANG) < 0 || si.si_pid == 0)
                        continue;
                const char *name = sigabbrev_np(si.si_status);
                log_warning("zygote %u (pid %d) was stopped by SIG%s; continuing it", z->generation, (int) z->pid,
                            name ? name : "?");
                (void) pidfd_send_signal(z->pidfd, SIGCONT, NULL, 0);
        }
}

static void on_signal(struct supervisor *s) {
        struct signalfd_siginfo si;
        while (read(s->signal_fd, &si, sizeof si) == (ssize_t) sizeof si) {
                if (si.ssi_signo == SIGCHLD) {
                        continue_stopped(s);
                        reap_orphans(s);
                }
                else if (si.ssi_signo == SIGHUP)
                        refresh(s, "SIGHUP");
                else
                        stop(s);
        }
}

static int setup(struct supervisor *s) {
        s->signal_fd = stop_signals_open();
        if (s->signal_fd < 0)
                return s->signal_fd;
        /* The zygotes' programs come to us if their zygote dies (reap_orphans). */
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 || signalfd(s->signal_fd, &mask, 0) < 0 ||
            prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
                /* qemu-user has no subreapers: init reaps them then, as it may. */
                log_warning_errno(errno, "cannot reap the programs of a zygote that dies; init will");
        s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (s->epoll_fd < 0)
                return -errno;
        /* on_listen accepts until none is left: a socket systemd passes blocks, and the supervisor
         * declining before its first zygote made it non-blocking hung in accept, its zygote's READY
         * unread (the virtual device's unit failed its start so). */
        if (fcntl(s->listen_fd, F_SETFL, fcntl(s->listen_fd, F_GETFL) | O_NONBLOCK) < 0)
                return -errno;
        return watch(s, s->signal_fd, &s->signal_watch);
}

/* Its state letter in /proc/PID/stat (R, S, D, T, t...; 0 when it cannot be read) and its CPU
 * time in clock ticks. */
static char process_state(pid_t pid, unsigned long long *cpu) {
        struct proc_stat st;
        if (proc_stat_read(pid, &st) < 0)
                return *cpu = 0, 0;
        *cpu = proc_stat_cpu_ticks(&st);
        return st.state;
}

/* A zygote whose loop no longer turns serves no one, and a signal cannot tell: it waits in a file
 * system that never answers (a FUSE or network file a client passed, whose close the kernel makes
 * wait for its server; a path a client named). It is taken for hung, ended, and another started:
 * its programs run on, as after a crash (a red team's trial, 2026-12-02: clients paid their 2 s
 * deadline and exec'd for as long as the file system's server lived). */
static void watch_serving(struct supervisor *s) {
        struct zygote *z = find(s, SERVING);
        uint64_t now = now_ms();
        if (!z || z->control_fd < 0)
                return;
        unsigned long long cpu;
        if (!z->pinged_ms) {
                if (now >= s->ping_at && control_send(z->control_fd, CONTROL_PING) >= 0) {
                        z->pinged_ms = now;
                        (void) process_state(z->pid, &z->pinged_cpu);
                }
                s->ping_at = now + PING_EVERY_MS;
                return;
        }
        if (now - z->pinged_ms < HUNG_AFTER_MS)
                return;
        char state = process_state(z->pid, &cpu);
        /* Working, waiting for a CPU, stopped for a debugger or a continue: asked again later. */
        if (cpu != z->pinged_cpu || state == 'R' || state == 't' || state == 'T') {
                z->pinged_ms = now;
                z->pinged_cpu = cpu;
                return;
        }
        log_error("zygote %u (pid %d) has not answered for %u s (state %c): ending it and starting another; "
                  "its programs run on", z->generation, (int) z->pid, HUNG_AFTER_MS / 1000u, state ? state : '?');
        s->failed = true;
        z->state = RETIRING; /* clients are declined until its successor serves */
        decline_clients(s, true);
        refresh(s, "the serving zygote hung");
        (void) pidfd_send_signal(z->pidfd, SIGKILL, NULL, 0);
}

static int timeout_ms(const struct supervisor *s) {
        if (s->stopping)
                return -1;
        uint64_t next = s->refresh_at;
        if (s->retry_at && (!next || s->retry_at < next))
                next = s->retry_at;
        const struct zygote *serving = find(s, SERVING);
        uint64_t ping = !serving ? 0 : serving->pinged_ms ? serving->pinged_ms + HUNG_AFTER_MS : s->ping_at;
        if (ping && (!next || ping < next))
                next = ping;
        if (!next)
                return -1;
        uint64_t now = now_ms();
        return next <= now ? 0 : (int) (next - now);
}

int supervisor_run(const struct daemon_options *o, int listen_fd, const char *socket_path, char *argv[]) {
        struct supervisor s = {
                .o = o, .argv = argv, .socket_path = socket_path, .listen_fd = listen_fd, .epoll_fd = -1,
                .signal_fd = -1, .listen_watch.listen = true,
                /* Outlives every zygote, so what one learned reaches the next even on a full disk. */
                .learned_fd = o->no_learn ? -1 : memfd_create("headstart-learned", MFD_CLOEXEC),
                .counts_fd = launch_counts_create(),
        };
        int r = setup(&s);
        if (r < 0)
                log_error_errno(r, "cannot set up the supervisor");
        else
                spawn(&s, "first start");
        /* Its clients exec rather than wait for the preload: at boot, with no display yet to prepare
         * a program's toolkit ahead, a program served in preload mode reached its first frame no
         * sooner than exec'd, and waited for the daemon besides (docs/results.md). */
        if (r >= 0 && o->exec_while_starting)
                decline_clients(&s, true);

        while (r >= 0 && !s.stop_requested && (s.zygotes || (s.retry_at && !s.stopping))) {
                struct epoll_event events[16];
                if (!s.stopping)
                        watch_serving(&s);
                int n = epoll_wait(s.epoll_fd, events, (int) ELEMENTSOF(events), timeout_ms(&s));
                if (n < 0 && errno != EINTR) {
                        r = log_error_errno(errno, "epoll_wait");
                        break;
                }
                if (n == 0 && s.refresh_at && now_ms() >= s.refresh_at) {
                        s.refresh_at = 0;
                        refresh(&s, "--refresh-seconds elapsed");
                }
                if (n == 0 && s.retry_at && now_ms() >= s.retry_at) {
                        s.retry_at = 0;
                        refresh(&s, s.retry_reason);
                }
                for (int i = 0; i < n; i++) {
                        struct zwatch *w = events[i].data.ptr;
                        if (w->listen)
                                on_listen(&s);
                        else if (!w->z)
                                on_signal(&s);
                        else if (w->z->ended)
                                continue;
                        else if (w->control)
                                on_control(&s, w->z);
                        else {
                                on_exit_of(&s, w->z);
                                reap_orphans(&s); /* those that ended while the zygote was a zombie */
                        }
                }
                for (struct zygote *z = s.zygotes, *next; z; z = next) {
                        next = z->next;
                        if (z->ended)
                                zygote_free(&s, z);
                }
        }
        (void) systemd_notify("STOPPING=1");
        if (s.listen_fd >= 0)
                close(s.listen_fd);
        while (s.zygotes) /* after a stop: they finish on their own; after an error of ours: they serve on */
                zygote_free(&s, s.zygotes);
        if (s.signal_fd >= 0)
                close(s.signal_fd);
        if (s.learned_fd >= 0)
                close(s.learned_fd);
        if (s.counts_fd >= 0)
                close(s.counts_fd);
        if (s.epoll_fd >= 0)
                close(s.epoll_fd);
        if (r >= 0 && !s.announced && !s.stop_requested)
                r = -ECHILD;
        if (r >= 0 && s.failed)
                r = -EPROTO;
        return r;
}
