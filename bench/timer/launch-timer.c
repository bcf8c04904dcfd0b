/* SPDX-License-Identifier: MIT */
/* Times launches of one program in several ways, alternating them so that machine noise falls on
 * all alike, and prints one JSON line per launch. The Python side turns these into statistics.
 *
 * Usage: launch-timer --runs N --run-client PATH [--socket PATH] [--daemon NAME=PATH]...
 *                     [--build NAME=PATH]... [--modes exec,exec@BUILD,run,direct,run@NAME,direct@NAME...]
 *                     [--ready REGEX] [--ready-window] [--stop-at-ready] [--any-status] [--linger-ms MS]
 *                     [--pause-ms MS] [--wait-prepared NAME] [--timeout SECONDS] -- PROGRAM ARGS...
 *   exec         posix_spawn of the program itself (the baseline)
 *   exec@BUILD   posix_spawn of another build of it (--build BUILD=PATH: relinked, say) with the same
 *                arguments, its argv[0] that PATH
 *   run[@NAME]   posix_spawn of headstart-run PROGRAM ARGS... against --socket or daemon NAME
 *   direct[@NAME] a request through libheadstart-client, as a program linking it would make
 * Several daemons (preload, warm, pool...) can so be compared with exec in one alternating run.
 * The program must write the CLOCK_MONOTONIC time at which main starts to $HEADSTART_MARK_FD
 * (bench/apps/mark.h). Time 0 is taken just before the spawn or the request. Ready is the first
 * line of its output (stdout or stderr, a pipe: the program must flush it) matching --ready, or
 * its first window shown (--ready-window, which also stops the program with SIGTERM once ready, as
 * --stop-at-ready does, or --linger-ms later), else its exit. A window is shown when a top-level
 * window is mapped on $DISPLAY (window-watch.c) or, with $WAYLAND_DISPLAY set, when a toplevel
 * surface's first frame is committed to the compositor (wayland-watch.c: the programs get a proxy's
 * socket as their WAYLAND_DISPLAY); with both set, either counts. A launch not ready (or, waiting
 * for its exit, not ended) within --timeout is stopped and reported as an error; the default is 30 s
 * with a ready condition and no limit for exit. A launch not ready (or not ended) in time also ends
 * the run (exit status 3, after its line): the next ones would most likely wait as long, for nothing
 * (a program given no --ready that never exits, a service, waited out every round). A launch
 * that exits with a status other than 0 is an error too, unless --any-status (diff, grep and cmp
 * say what they found in it); each line gives the exit status, -1 for a launch stopped at ready.
 * --wait-prepared NAME: after each pause, also until daemon NAME has no child of --prepare-display
 * due or starting (its --status, asked through the run client), PREPARED_WAIT_NS at most.
 *
 * SIGTERM, and the end of our parent (PR_SET_PDEATHSIG), stop the launch under way and end the run
 * once it is reported: the timer never outlives what started it. SIGUSR1 lets the launch under way
 * finish first (a load generator stopped by a test). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "headstart/client.h"
#include "protocol.h"
#include "wayland-watch.h"
#include "window-watch.h"

extern char **environ;

enum how { HOW_EXEC, HOW_RUN, HOW_DIRECT };
#define MAX_MODES 32
#define MAX_DAEMONS 8
#define MAX_BUILDS 8

struct mode {
        char name[64]; /* as given in --modes; it names the mode in the output */
        enum how how;
        const char *socket;
        const char *path; /* exec@BUILD: that build's program, else NULL (the program) */
};

struct daemon {
        char *name;
        const char *socket;
};

struct config {
        int runs;
        const char *socket;
        const char *run_client;
        struct daemon daemons[MAX_DAEMONS];
        int ndaemons;
        struct daemon builds[MAX_BUILDS]; /* --build NAME=PATH: other builds of the program, exec'd */
        int nbuilds;
        const char *mode_list;
        struct mode modes[MAX_MODES];
        int nmodes;
        regex_t ready;      /* --ready: a line of output matching it */
        bool ready_set;
        struct window_watch *windows; /* --ready-window: a top-level window mapped on X */
        struct wayland_watch *wayland; /* --ready-window: a toplevel's first frame on Wayland */
        bool ready_wanted;  /* either; otherwise ready is exit */
        bool stop_at_ready; /* SIGTERM once ready (implied by --ready-window) */
        bool ready_window;
        bool any_status;    /* --any-status: an exit with any status is a launch (diff's 1), not a failure */
        long long linger_ms; /* with --stop-at-ready: how long after ready */
        long long pause_ms;  /* --pause-ms: between launches */
        const char *wait_prepared; /* --wait-prepared: that daemon's socket, or NULL */
        long long timeout_ns; /* --timeout: a launch's time to ready or end; <0: none */
        char **argv; /* program and its arguments */
        char path[PATH_MAX]; /* the program, absolute */
        int out;     /* where the JSON lines go */
};

static long long now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One launch under way, whichever way it was asked for. */
struct launch {
        pid_t pid;             /* exec, run: our child */
        int pidfd;             /* exec, run: readable when it ends */
        struct hs_launch *l;   /* direct */
        bool ended, stopped;
        bool never_ready;      /* not ready (or not ended) within --timeout */
        int status;            /* wait status */
        char why[HS_MAX_TEXT + 64];
};

static int spawn(struct launch *x, const char *file, char **argv, char **envp, const posix_spawn_file_actions_t *fa) {
        int r = posix_spawn(&x->pid, file, fa, NULL, argv, envp);
        if (r != 0)
                return snprintf(x->why, sizeof x->why, "spawn: %s", strerror(r)), -1;
        x->pidfd = (int) syscall(SYS_pidfd_open, x->pid, 0);
        return x->pidfd < 0 ? (snprintf(x->why, sizeof x->why, "pidfd_open: %s", strerror(errno)), -1) : 0;
}

static int start(struct launch *x, const struct config *c, const struct mode *m, char **envp,
                 const posix_spawn_file_actions_t *fa) {
        *x = (struct launch){ .pid = -1, .pidfd = -1 };
        if (m->how == HOW_EXEC && m->path) {
                /* Another build: the same arguments after its own path. */
                int argc = 0;
                while (c->argv[argc])
                        argc++;
                char **argv = calloc((size_t) argc + 1, sizeof(char *));
                if (!argv)
                        return snprintf(x->why, sizeof x->why, "out of memory"), -1;
                memcpy(argv, c->argv, (size_t) argc * sizeof(char *));
                argv[0] = (char *) m->path;
                int r = spawn(x, m->path, argv, envp, fa);
                free(argv);
                return r;
        }
        if (m->how == HOW_EXEC)
                return spawn(x, c->path, c->argv, envp, fa);
        if (m->how == HOW_RUN) {
                int argc = 0;
                while (c->argv[argc])
                        argc++;
                char **argv = calloc((size_t) argc + 4, sizeof(char *));
                argv[0] = (char *) c->run_client;
                argv[1] = (char *) "--socket";
                argv[2] = (char *) m->socket;
                memcpy(argv + 3, c->argv, (size_t) argc * sizeof(char *));
                int r = spawn(x, c->run_client, argv, envp, fa);
                free(argv);
                return r;
        }
        /* The client library passes our fds 0-2 on: point them at the output pipe meanwhile. */
        struct hs_launch_options o = { .socket = m->socket };
        int r = hs_launch_start(c->path, c->argv, envp, &o, &x->l);
        if (r > 0)
                snprintf(x->why, sizeof x->why, "declined: %s", hs_launch_reason(x->l));
        else if (r < 0)
                snprintf(x->why, sizeof x->why, "launch: %s", strerror(-r));
        return r != 0 ? -1 : 0;
}

static int end_fd(const struct launch *x) {
        return x->l ? hs_launch_fd(x->l) : x->pidfd;
}

static void reap(struct launch *x) {
        if (x->l) {
                int code = 0, status = 0;
                int r = hs_launch_wait(x->l, &code, &status);
                if (r > 0)
                        snprintf(x->why, sizeof x->why, "declined: %s", hs_launch_reason(x->l));
                else if (r < 0)
                        snprintf(x->why, sizeof x->why, "launch: %s", strerror(-r));
                else
                        x->status = code == CLD_EXITED ? W_EXITCODE(status, 0) : status;
        } else
                while (waitpid(x->pid, &x->status, 0) < 0 && errno == EINTR)
                        ;
        x->ended = true;
}

static void stop(struct launch *x, int sig) {
        if (x->l)
                (void) hs_launch_signal(x->l, sig);
        else
                (void) kill(x->pid, sig);
        x->stopped = true;
}

static void finish(struct launch *x) {
        if (x->pidfd >= 0)
                close(x->pidfd);
        hs_launch_free(x->l);
}

/* Where the program finds the mark pipe (inherited, so without close-on-exec). */
#define MARK_FD 99

/* Between launches /dev/null holds MARK_FD (close-on-exec), so that no fd of ours takes it. */
static void reserve_mark_fd(void) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || (fd != MARK_FD && dup3(fd, MARK_FD, O_CLOEXEC) != MARK_FD))
                exit(EXIT_FAILURE);
        if (fd != MARK_FD)
                close(fd);
}

static char **env_with_mark(int fd) {
        size_t n = 0;
        while (environ[n])
                n++;
        char **envp = calloc(n + 2, sizeof(char *));
        char *mark = malloc(32);
        if (!envp || !mark)
                exit(EXIT_FAILURE);
        snprintf(mark, 32, "HEADSTART_MARK_FD=%d", fd);
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (strncmp(environ[i], "HEADSTART_MARK_FD=", 18) != 0)
                        envp[k++] = environ[i];
        envp[k++] = mark;
        return envp;
}

/* What one launch has seen so far. */
struct seen {
        long long t_main, t_ready, t_exit;
        char mark[64];
        size_t mark_got;
        char line[4096]; /* the output line being read */
        size_t line_got;
        char last[160]; /* the last line that was not empty: what a failed program said last */
};

/* Both readers drain their pipe and return false at its end (every writer closed it): a pipe at its
 * end polls readable for ever, so it must leave the poll set or the wait becomes a busy loop. */
static bool read_mark(int fd, struct seen *v) {
        char buf[256];
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0) {
                size_t take = (size_t) n < sizeof v->mark - 1 - v->mark_got ? (size_t) n : sizeof v->mark - 1 - v->mark_got;
                memcpy(v->mark + v->mark_got, buf, take);
                v->mark_got += take;
        }
        v->mark[v->mark_got] = '\0';
        if (v->t_main < 0 && strchr(v->mark, '\n'))
                v->t_main = atoll(v->mark);
        return n != 0;
}

/* Reads the program's output; the first complete line matching the pattern makes it ready. */
static bool read_output(const struct config *c, int fd, struct seen *v, long long now) {
        char buf[4096];
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0)
                for (ssize_t i = 0; i < n; i++) {
                        if (buf[i] != '\n' && v->line_got < sizeof v->line - 1) {
                                v->line[v->line_got++] = buf[i];
                                continue;
                        }
                        v->line[v->line_got] = '\0';
                        if (v->line_got) {
                                size_t keep = v->line_got < sizeof v->last - 1 ? v->line_got : sizeof v->last - 1;
                                memcpy(v->last, v->line, keep);
                                v->last[keep] = '\0';
                        }
                        v->line_got = 0;
                        if (v->t_ready < 0 && c->ready_set && regexec(&c->ready, v->line, 0, NULL, 0) == 0)
                                v->t_ready = now;
                }
        return n != 0;
}

/* With a ready condition and no --timeout, a launch not ready by then is stopped; one that ignores
 * SIGTERM is killed after the grace. */
#define READY_TIMEOUT_NS (30LL * 1000000000LL)
/* --wait-prepared: the daemon's 5 s for a spare CPU after a launch, and the toolkit's start. */
#define PREPARED_WAIT_NS (10LL * 1000000000LL)
#define STOP_GRACE_NS (5LL * 1000000000LL)

/* After a Wayland program's first frame, how long it runs on before it is stopped: time for the
 * compositor to answer that frame with a protocol error, if it refuses it (not part of any time). */
#define WAYLAND_ANSWER_MS 100

/* Written by the SIGTERM handler, polled by follow(): a flag alone could arrive just before poll. */
static int stop_pipe[2] = { -1, -1 };
static volatile sig_atomic_t stop_requested;
/* SIGUSR1: finish the launch in progress, report it, and end (a load generator being stopped). */
static volatile sig_atomic_t finish_requested;

static void on_sigusr1(int sig) {
        (void) sig;
        finish_requested = 1;
}

static void on_sigterm(int sig) {
        (void) sig;
        int saved = errno;
        stop_requested = 1;
        (void) !write(stop_pipe[1], "", 1);
        errno = saved;
}

/* poll's timeout until `at`: -1 (wait without limit) for no deadline, never 0 for one ahead. */
static int poll_timeout(long long at, long long now) {
        if (at == LLONG_MAX)
                return -1;
        if (at <= now)
                return 0;
        long long ms = (at - now + 999999) / 1000000;
        return ms > INT_MAX ? INT_MAX : (int) ms;
}

/* Follows the launch until it ended: its mark of main, its output, a window, its end. */
static void follow(const struct config *c, struct launch *x, int mark_fd, int out_fd, long long t0, struct seen *v) {
        long long stop_at = c->timeout_ns < 0 ? LLONG_MAX : t0 + c->timeout_ns;
        bool mark_open = true, out_open = true;
        while (!x->ended) {
                struct pollfd p[6] = { { mark_open ? mark_fd : -1, POLLIN, 0 },
                                       { out_open ? out_fd : -1, POLLIN, 0 },
                                       { end_fd(x), POLLIN, 0 },
                                       { c->windows ? window_watch_fd(c->windows) : -1, POLLIN, 0 },
                                       { stop_pipe[0], POLLIN, 0 },
                                       { c->wayland ? wayland_watch_fd(c->wayland) : -1, POLLIN, 0 } };
                if (poll(p, 6, poll_timeout(stop_at, now_ns())) < 0 && errno != EINTR) {
                        snprintf(x->why, sizeof x->why, "poll: %s", strerror(errno));
                        stop_requested = 1;
                }
                long long now = now_ns();
                if (p[0].revents)
                        mark_open = read_mark(mark_fd, v);
                if (p[1].revents)
                        out_open = read_output(c, out_fd, v, now);
                if (v->t_ready < 0 && c->windows && window_watch_mapped(c->windows))
                        v->t_ready = now;
                /* The proxy passes on every message while the program runs, ready or not. */
                if (c->wayland && wayland_watch_shown(c->wayland) && v->t_ready < 0)
                        v->t_ready = now;
                if (p[2].revents) {
                        v->t_exit = now;
                        reap(x);
                } else if (stop_requested && !x->stopped) {
                        if (!x->why[0])
                                snprintf(x->why, sizeof x->why, "stopped: launch-timer was terminated");
                        stop(x, SIGTERM);
                        stop_at = now + STOP_GRACE_NS;
                } else if (now >= stop_at) {
                        if (!x->why[0] && (c->ready_wanted ? v->t_ready < 0 : !x->stopped)) {
                                const char *problem = c->wayland ? wayland_watch_problem(c->wayland) : NULL;
                                snprintf(x->why, sizeof x->why, "%s within %g s%s%s%s",
                                         !c->ready_wanted ? "not ended"
                                         : c->ready_set   ? "not ready"
                                                          : "no window shown",
                                         (double) c->timeout_ns / 1e9,
                                         problem ? " (" : "", problem ? problem : "", problem ? ")" : "");
                                x->never_ready = true;
                        }
                        stop(x, x->stopped ? SIGKILL : SIGTERM);
                        stop_at = now + STOP_GRACE_NS;
                } else if (v->t_ready >= 0 && c->stop_at_ready && !x->stopped) {
                        /* Lingering lets the program run on a little, as it would for a user; on
                         * Wayland at least as long as the compositor takes to refuse that frame. */
                        long long linger_ms = c->wayland && c->linger_ms < WAYLAND_ANSWER_MS ? WAYLAND_ANSWER_MS
                                                                                               : c->linger_ms;
                        long long linger_until = v->t_ready + linger_ms * 1000000LL;
                        if (now >= linger_until) {
                                stop(x, SIGTERM);
                                stop_at = now + STOP_GRACE_NS;
                        } else if (linger_until < stop_at)
                                stop_at = linger_until;
                }
        }
        read_mark(mark_fd, v);
}

/* Appends text to buf[at..] as a JSON string's content: quotes and backslashes escaped, control
 * characters made spaces. */
static void append_json_safe(char *buf, size_t size, size_t at, const char *text) {
        for (const char *p = text; *p && at + 2 < size; p++) {
                unsigned char ch = (unsigned char) *p;
                if (ch == '"' || ch == '\\') {
                        buf[at++] = '\\';
                        buf[at++] = (char) ch;
                } else
                        buf[at++] = ch < 0x20 ? ' ' : (char) ch;
        }
        buf[at] = '\0';
}

/* "WHAT: exit status 1: its last line", as a JSON string's content. */
static void describe_end(const char *what, const struct launch *x, const struct seen *v, char *buf, size_t size) {
        int n = WIFSIGNALED(x->status) ? snprintf(buf, size, "%s: killed by signal %d", what, WTERMSIG(x->status))
                                       : snprintf(buf, size, "%s: exit status %d", what, WEXITSTATUS(x->status));
        if (n < 0 || (size_t) n >= size || !v->last[0])
                return;
        size_t at = (size_t) n;
        at += (size_t) snprintf(buf + at, size - at, ": ");
        append_json_safe(buf, size, at, v->last);
}

/* A frame the compositor answered with a protocol error (which ends the program's connection) was
 * never shown: the launch failed, whatever its exit. As a JSON string's content in buf. */
static bool describe_refusal(const struct config *c, char *buf, size_t size) {
        const char *refused = c->wayland ? wayland_watch_refused(c->wayland) : NULL;
        if (!refused)
                return false;
        int n = snprintf(buf, size, "the compositor refused the program's window with a protocol error: ");
        append_json_safe(buf, size, (size_t) n, refused);
        return true;
}

static void pause_for(const struct config *c, long long ms) {
        long long until = now_ns() + ms * 1000000LL;
        for (long long now = now_ns(); now < until && !stop_requested; now = now_ns()) {
                struct pollfd p = { c->wayland ? wayland_watch_fd(c->wayland) : -1, POLLIN, 0 };
                (void) poll(&p, 1, (int) ((until - now) / 1000000LL) + 1);
                if (c->wayland)
                        (void) wayland_watch_shown(c->wayland);
        }
}

/* Whether the daemon at socket says a child of --prepare-display is due or starting
 * (docs/protocol.md, `prepared`); false when it cannot be asked. */
static bool prepared_pending(const struct config *c, const char *socket) {
        int out[2];
        if (pipe2(out, O_CLOEXEC) < 0)
                return false;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
        char *argv[] = { (char *) c->run_client, "--socket", (char *) socket, "--status", NULL };
        pid_t pid;
        int r = posix_spawn(&pid, c->run_client, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(out[1]);
        char text[1 << 16];
        size_t n = 0;
        for (ssize_t got; r == 0 && n < sizeof text - 1 && (got = read(out[0], text + n, sizeof text - 1 - n)) > 0;)
                n += (size_t) got;
        text[n] = '\0';
        close(out[0]);
        if (r == 0)
                (void) waitpid(pid, NULL, 0);
        return strstr(text, "prepared: due ") || strstr(text, "prepared: starting ");
}

/* --pause-ms: time between launches for what a daemon does after one (headstartd --prepare-display
 * readies the next), so that it does not run during another mode's launch. The Wayland proxy passes
 * on meanwhile what the programs' connections send, as a compositor would. With --wait-prepared,
 * longer while the next child is to come: on a busy machine the daemon waits up to 5 s after a
 * launch for a CPU to spare before it starts one (docs/architecture.md). */
static void pause_between(const struct config *c) {
        pause_for(c, c->pause_ms);
        long long until = now_ns() + PREPARED_WAIT_NS;
        while (c->wait_prepared && !stop_requested && now_ns() < until && prepared_pending(c, c->wait_prepared))
                pause_for(c, 50);
}

/* False when the launch was not ready within the timeout. */
static bool one_launch(const struct config *c, const struct mode *m, int round) {
        int mark[2], out[2];
        if (pipe2(mark, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(out, O_CLOEXEC | O_NONBLOCK) < 0)
                exit(EXIT_FAILURE);
        /* The same number in every launch (the Wayland proxy's connections come and go below it), so
         * that every launch of a run has the same fds and environment, as a launcher's would. It is
         * held by /dev/null between launches (reserve_mark_fd), so nothing else gets it. */
        if (dup2(mark[1], MARK_FD) != MARK_FD)
                exit(EXIT_FAILURE);
        close(mark[1]);
        mark[1] = MARK_FD;
        /* The program's stdout and stderr go into our pipe (read for --ready), blocking for it. */
        (void) fcntl(out[1], F_SETFL, 0);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&fa, out[1], STDERR_FILENO);
        char **envp = env_with_mark(mark[1]);
        struct seen v = { .t_main = -1, .t_ready = -1, .t_exit = -1 };
        struct launch x;
        if (c->windows)
                window_watch_reset(c->windows);
        if (c->wayland)
                wayland_watch_reset(c->wayland);

        /* The client library hands the program our own fds 0-2: make 1 and 2 the pipe meanwhile. */
        int saved_out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3), saved_err = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        if (m->how == HOW_DIRECT) {
                dup2(out[1], STDOUT_FILENO);
                dup2(out[1], STDERR_FILENO);
        }
        long long t0 = now_ns();
        int r = start(&x, c, m, envp, &fa);
        dup2(saved_out, STDOUT_FILENO);
        dup2(saved_err, STDERR_FILENO);
        close(saved_out);
        close(saved_err);
        reserve_mark_fd();
        close(out[1]);
        posix_spawn_file_actions_destroy(&fa);
        if (r == 0)
                follow(c, &x, mark[0], out[0], t0, &v);
        close(mark[0]);
        close(out[0]);

        bool status_ok = x.stopped ? x.why[0] == '\0'
                                   : WIFEXITED(x.status) && (c->any_status || WEXITSTATUS(x.status) == 0);
        char refused[320];
        bool was_refused = describe_refusal(c, refused, sizeof refused);
        if (r < 0 || x.why[0] || v.t_main < 0 || !status_ok || was_refused || (c->ready_wanted && v.t_ready < 0)) {
                char failed[256];
                describe_end(status_ok ? "the program ended before it was ready" : "the program failed", &x, &v, failed,
                             sizeof failed);
                dprintf(c->out, "{\"mode\": \"%s\", \"round\": %d, \"error\": \"%s\"}\n", m->name, round,
                        was_refused ? refused
                        : x.why[0]  ? x.why
                        : v.t_main < 0 ? "the program did not mark main"
                                       : failed);
        } else
                dprintf(c->out,
                        "{\"mode\": \"%s\", \"round\": %d, \"to_main_ns\": %lld, \"to_ready_ns\": %lld, "
                        "\"to_exit_ns\": %lld, \"stopped\": %s, \"exit_status\": %d}\n",
                        m->name, round, v.t_main - t0, (c->ready_wanted ? v.t_ready : v.t_exit) - t0, v.t_exit - t0,
                        x.stopped ? "true" : "false", x.stopped ? -1 : WEXITSTATUS(x.status));
        finish(&x);
        size_t last = 0;
        while (envp[last + 1])
                last++;
        free(envp[last]); /* the mark variable, the only string we allocated */
        free(envp);
        return !x.never_ready;
}

static const char *daemon_socket(const struct config *c, const char *name) {
        if (!name)
                return c->socket;
        for (int i = 0; i < c->ndaemons; i++)
                if (strcmp(c->daemons[i].name, name) == 0)
                        return c->daemons[i].socket;
        return NULL;
}

static const char *build_path(const struct config *c, const char *name) {
        for (int i = 0; i < c->nbuilds; i++)
                if (strcmp(c->builds[i].name, name) == 0)
                        return c->builds[i].socket;
        return NULL;
}

static int parse_modes(struct config *c, const char *list) {
        char *copy = strdup(list), *save = NULL;
        int r = 0;
        for (char *t = strtok_r(copy, ",", &save); t && r == 0; t = strtok_r(NULL, ",", &save)) {
                struct mode *m = &c->modes[c->nmodes];
                char *at = strchr(t, '@');
                snprintf(m->name, sizeof m->name, "%s", t);
                if (at)
                        *at++ = '\0';
                m->path = NULL;
                if (strcmp(t, "exec") == 0 && !at)
                        m->how = HOW_EXEC;
                else if (strcmp(t, "exec") == 0 && (m->path = build_path(c, at)))
                        m->how = HOW_EXEC;
                else if (strcmp(t, "run") == 0)
                        m->how = HOW_RUN;
                else if (strcmp(t, "direct") == 0)
                        m->how = HOW_DIRECT;
                else
                        r = -1;
                if (r == 0 && m->how != HOW_EXEC && !(m->socket = daemon_socket(c, at)))
                        r = -1;
                if (r == 0 && ++c->nmodes == MAX_MODES)
                        r = -1;
                if (r < 0)
                        fprintf(stderr, "launch-timer: bad mode '%s' (exec[@BUILD], run[@DAEMON], direct[@DAEMON])\n",
                                m->name);
        }
        free(copy);
        return r;
}

static int parse_args(struct config *c, int argc, char *argv[]) {
        int i = 1;
        for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
                const char *v = i + 1 < argc ? argv[i + 1] : NULL;
                if (!v)
                        break;
                if (strcmp(argv[i], "--runs") == 0)
                        c->runs = atoi(v);
                else if (strcmp(argv[i], "--socket") == 0)
                        c->socket = v;
                else if (strcmp(argv[i], "--run-client") == 0)
                        c->run_client = v;
                else if (strcmp(argv[i], "--modes") == 0)
                        c->mode_list = v;
                else if (strcmp(argv[i], "--linger-ms") == 0)
                        c->linger_ms = atoll(v);
                else if (strcmp(argv[i], "--pause-ms") == 0)
                        c->pause_ms = atoll(v);
                else if (strcmp(argv[i], "--wait-prepared") == 0)
                        c->wait_prepared = v; /* a daemon's name: its socket once all are read */
                else if (strcmp(argv[i], "--timeout") == 0) {
                        char *end;
                        double seconds = strtod(v, &end);
                        if (*end || !(seconds > 0 && seconds < 1e6)) {
                                fprintf(stderr, "launch-timer: --timeout: not a number of seconds: %s\n", v);
                                return -1;
                        }
                        c->timeout_ns = (long long) (seconds * 1e9);
                }
                else if (strcmp(argv[i], "--ready") == 0) {
                        if (regcomp(&c->ready, v, REG_EXTENDED | REG_NOSUB) != 0) {
                                fprintf(stderr, "launch-timer: --ready: not a regular expression: %s\n", v);
                                return -1;
                        }
                        c->ready_set = true;
                } else if (strcmp(argv[i], "--ready-window") == 0 || strcmp(argv[i], "--stop-at-ready") == 0) {
                        c->ready_window |= strcmp(argv[i], "--ready-window") == 0;
                        c->stop_at_ready = true;
                        continue; /* takes no value */
                } else if (strcmp(argv[i], "--any-status") == 0) {
                        c->any_status = true;
                        continue;
                }
                else if (strcmp(argv[i], "--daemon") == 0 && strchr(v, '=') && c->ndaemons < MAX_DAEMONS) {
                        char *eq = strchr(argv[i + 1], '='); /* NAME=PATH, split in place */
                        *eq = '\0';
                        c->daemons[c->ndaemons++] = (struct daemon){ argv[i + 1], eq + 1 };
                } else if (strcmp(argv[i], "--build") == 0 && strchr(v, '=') && c->nbuilds < MAX_BUILDS) {
                        char *eq = strchr(argv[i + 1], '='); /* NAME=PATH, split in place */
                        *eq = '\0';
                        c->builds[c->nbuilds++] = (struct daemon){ argv[i + 1], eq + 1 };
                } else
                        break;
                i++;
        }
        if (i >= argc - 1 || strcmp(argv[i], "--") != 0 || c->runs < 1 || !c->run_client) {
                fprintf(stderr, "usage: launch-timer --runs N --run-client PATH [--socket PATH] [--daemon NAME=PATH]... "
                                "[--build NAME=PATH]... [--modes exec,exec@BUILD,run,direct,run@NAME,direct@NAME] "
                                "[--ready REGEX] [--ready-window] "
                                "[--stop-at-ready] [--any-status] [--linger-ms MS] [--pause-ms MS] [--wait-prepared NAME] "
                                "[--timeout SECONDS] -- PROGRAM "
                                "ARGS...\n");
                return -1;
        }
        if (parse_modes(c, c->mode_list ? c->mode_list : "exec,run,direct") < 0)
                return -1;
        if (c->wait_prepared && !(c->wait_prepared = daemon_socket(c, c->wait_prepared))) {
                fprintf(stderr, "launch-timer: --wait-prepared: no --daemon of that name\n");
                return -1;
        }
        c->argv = argv + i + 1;
        if (!realpath(c->argv[0], c->path)) {
                fprintf(stderr, "launch-timer: %s: %s\n", c->argv[0], strerror(errno));
                return -1;
        }
        return 0;
}

/* --ready-window: the displays the programs may show a window on. With $WAYLAND_DISPLAY set, the
 * programs are given our proxy's socket instead (WAYLAND_SOCKET, an fd already connected, is
 * dropped: the programs would use it first). */
static int open_watches(struct config *c) {
        const char *wayland = getenv("WAYLAND_DISPLAY"), *x = getenv("DISPLAY");
        if (wayland && *wayland) {
                if (!(c->wayland = wayland_watch_open()))
                        return -1;
                if (setenv("WAYLAND_DISPLAY", wayland_watch_address(c->wayland), 1) < 0 ||
                    unsetenv("WAYLAND_SOCKET") < 0)
                        return -1;
                if (!x || !*x)
                        return 0;
        }
        if ((c->windows = window_watch_open()))
                return 0;
        wayland_watch_close(c->wayland);
        c->wayland = NULL;
        return -1;
}

/* What the run holds, let go at its end: a sanitizer build's LeakSanitizer fails the exit otherwise. */
static void config_done(struct config *c) {
        window_watch_close(c->windows);
        wayland_watch_close(c->wayland); /* removes its socket */
        if (c->ready_set)
                regfree(&c->ready);
}

int main(int argc, char *argv[]) {
        /* Our parent's end is a SIGTERM (PR_SET_PDEATHSIG, kept across execve for a program that is
         * not set-user-ID); one that ended before this line is seen by getppid() changing. A parent
         * that ended before we read it the first time is not (a few milliseconds after its fork). */
        pid_t parent = getppid();
        struct config c = { .timeout_ns = -1 };
        /* SIGTERM stops the launch in progress and ends the run once it is reported. */
        if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                return 2;
        struct sigaction sa = { .sa_handler = on_sigterm };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        struct sigaction finish = { .sa_handler = on_sigusr1, .sa_flags = SA_RESTART };
        sigemptyset(&finish.sa_mask);
        sigaction(SIGUSR1, &finish, NULL);
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
                return 2;
        if (parse_args(&c, argc, argv) < 0)
                return 2;
        if (c.ready_window && open_watches(&c) < 0) {
                config_done(&c);
                return 2;
        }
        c.ready_wanted = c.ready_set || c.ready_window;
        if (c.ready_wanted && c.timeout_ns < 0)
                c.timeout_ns = READY_TIMEOUT_NS;

        reserve_mark_fd();
        /* Results go to our stdout; the programs get /dev/null for stdin, the output pipe for the rest. */
        c.out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        int null = open("/dev/null", O_RDWR);
        for (int fd = 0; fd <= 2; fd++)
                dup2(null, fd);
        close(null);

        bool ready_in_time = true;
        for (int round = 0; round < c.runs && ready_in_time && !stop_requested && !finish_requested; round++)
                for (int k = 0; k < c.nmodes && ready_in_time && !stop_requested && !finish_requested; k++)
                        /* Rotate which mode goes first, so no mode always follows another. */
                {
                        if (round + k > 0)
                                pause_between(&c);
                        ready_in_time = one_launch(&c, &c.modes[(k + round) % c.nmodes], round);
                }
        config_done(&c);
        return ready_in_time ? 0 : 3;
}
