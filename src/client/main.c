/* SPDX-License-Identifier: MIT */
/* headstart-run PROGRAM [ARGS...]: runs PROGRAM through headstartd, or execs it when the daemon
 * cannot serve it. Either way the caller sees what exec would have given it: the program's output,
 * its exit status or the signal that killed it, and every signal sent to us reaches the program. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "headstart/client.h"
#include "log.h"
#include "macro.h"
#include "path-search.h"
#include "proc-stat.h"

extern char **environ;

static const char *arg_socket = NULL;
static bool arg_exec = false;
static bool arg_status = false;
static bool arg_json = false;
static bool arg_terminal = false;
static unsigned arg_timeout_ms = HS_LAUNCH_DEFAULT_TIMEOUT_MS;

/* Set once in main, read-only afterwards. */
static bool debug = false;
static sigset_t original_mask;

static void help(void) {
        static const char text[] =
                "Usage: headstart-run [--socket PATH] [--timeout MS] [--exec | --terminal] PROGRAM [ARGS...]\n"
                "  or:  headstart-run [--socket PATH] --status [--json]\n"
                "Runs PROGRAM through headstartd when it can, and by exec otherwise.\n\n"
                "  --socket PATH   the daemon's socket (default $HEADSTART_SOCKET,\n"
                "                  else $XDG_RUNTIME_DIR/headstart/socket)\n"
                "  --timeout MS    exec PROGRAM if the daemon has not answered within MS\n"
                "                  milliseconds (default 2000); it never runs twice\n"
                "  --exec          do not ask the daemon: exec PROGRAM directly\n"
                "  --terminal      serve PROGRAM even from a terminal: it writes to it (colours and\n"
                "                  all) but must not need /dev/tty or job control of its own, as a\n"
                "                  compiler does not; without it, the daemon's configuration decides\n"
                "  --status        print what the daemon serves and how it has been doing\n"
                "  --json          with --status: as one JSON object (docs/protocol.md)\n"
                "Set HEADSTART_DEBUG=1 to see why a launch went to exec. Without it, a line of\n"
                "its own goes to stderr only when the daemon rejected the request (another user's\n"
                "socket: su and sudo -E keep XDG_RUNTIME_DIR) or did not answer in time; PROGRAM\n"
                "then runs by exec.\n";
        (void) !write(STDOUT_FILENO, text, sizeof text - 1);
}

static int parse_timeout(const char *s) {
        char *end;
        errno = 0;
        unsigned long ms = strtoul(s, &end, 10);
        if (errno || end == s || *end || s[0] == '-' || ms == 0 || ms > 3600000) {
                log_error("--timeout takes milliseconds, 1 to 3600000: %s", s);
                return -1;
        }
        arg_timeout_ms = (unsigned) ms;
        return 0;
}

/* Returns the index of PROGRAM in argv, 0 when done (help), or -1 on a usage error. */
static int parse_argv(int argc, char *argv[]) {
        int i = 1;
        for (; i < argc && argv[i][0] == '-'; i++) {
                if (strcmp(argv[i], "--") == 0) {
                        i++;
                        break;
                } else if (strcmp(argv[i], "--exec") == 0)
                        arg_exec = true;
                else if (strcmp(argv[i], "--status") == 0)
                        arg_status = true;
                else if (strcmp(argv[i], "--json") == 0)
                        arg_json = true;
                else if (strcmp(argv[i], "--terminal") == 0)
                        arg_terminal = true;
                else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
                        arg_socket = argv[++i];
                else if (strncmp(argv[i], "--socket=", 9) == 0)
                        arg_socket = argv[i] + 9;
                else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
                        if (parse_timeout(argv[++i]) < 0)
                                return -1;
                } else if (strncmp(argv[i], "--timeout=", 10) == 0) {
                        if (parse_timeout(argv[i] + 10) < 0)
                                return -1;
                }
                else if (strcmp(argv[i], "--help") == 0) {
                        help();
                        return 0;
                } else if (strcmp(argv[i], "--version") == 0) {
                        static const char v[] = "headstart-run " HEADSTART_VERSION "\n";
                        (void) !write(STDOUT_FILENO, v, sizeof v - 1);
                        return 0;
                } else if (strcmp(argv[i], "--socket") == 0 || strcmp(argv[i], "--timeout") == 0) {
                        log_error("%s needs a value (try --help)", argv[i]);
                        return -1;
                } else {
                        log_error("unknown option %s (try --help)", argv[i]);
                        return -1;
                }
        }
        if (arg_json && !arg_status) {
                log_error("--json goes with --status");
                return -1;
        }
        if (i >= argc && !arg_status) {
                log_error("no program given (try --help)");
                return -1;
        }
        return i;
}

static _Noreturn void exec_program(char *argv[], const char *why) {
        if (debug && why)
                log_error("running %s by exec: %s", argv[0], why);
        sigprocmask(SIG_SETMASK, &original_mask, NULL);
        execvp(argv[0], argv);
        int e = errno;
        log_error_errno(e, "%s", argv[0]);
        _exit(e == ENOENT ? 127 : 126);
}

/* What exec keeps for the program from this process and a child of the daemon cannot be given: a
 * signal pending (blocked by the caller), which the program would find pending at main; an interval
 * timer (alarm, setitimer), which would go on counting for it: a CPU-time one set by a caller to
 * bound the program's CPU (the daemon's child has its own, unset). NULL when there is neither. A
 * POSIX record lock, also kept, is looked for by the client library (HS_LAUNCH_EXECS_WHEN_DECLINED). */
static const char *kept_across_exec(void) {
        sigset_t pending;
        sigemptyset(&pending);
        (void) sigpending(&pending);
        for (int sig = 1; sig < NSIG; sig++)
                if (sigismember(&pending, sig) == 1)
                        return "a signal is pending, which exec keeps pending for the program";
        static const int timers[] = { ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF };
        for (size_t i = 0; i < sizeof timers / sizeof timers[0]; i++) {
                struct itimerval t;
                if (getitimer(timers[i], &t) == 0 && (t.it_value.tv_sec || t.it_value.tv_usec))
                        return "an interval timer is set (alarm, setitimer), which exec keeps for the program";
        }
        return NULL;
}

static _Noreturn void exit_like(int code, int status) {
        if (code == CLD_EXITED)
                exit(status);
        /* Die of the same signal so that our parent sees what it would have seen. Our own core
         * would overwrite the program's, so none is written. */
        struct rlimit no_core = { 0, 0 };
        (void) setrlimit(RLIMIT_CORE, &no_core);
        signal(status, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, status);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(status);
        exit(128 + status);
}

/* Every signal a process can catch, which we forward; SIGKILL and SIGSTOP cannot be. */
static void catchable_signals(sigset_t *set) {
        sigfillset(set);
        sigdelset(set, SIGKILL);
        sigdelset(set, SIGSTOP);
}

/* The state, parent, process group and session of pid (/proc/PID/stat). */
static bool read_stat(pid_t pid, char *state, pid_t *ppid, pid_t *pgrp, pid_t *sid) {
        struct proc_stat st;
        if (proc_stat_read(pid, &st) < 0)
                return false;
        *state = st.state;
        *ppid = (pid_t) st.v[4], *pgrp = (pid_t) st.v[5], *sid = (pid_t) st.v[6];
        return true;
}

static bool is_stopped(pid_t pid) {
        char state;
        pid_t ppid, pgrp, sid;
        return read_stat(pid, &state, &ppid, &pgrp, &sid) && (state == 'T' || state == 't');
}

/* Whether our process group is orphaned (POSIX): no member has a parent in another group of our
 * session, no shell doing job control over it (script(1), ssh -t, docker run -t). The kernel then
 * drops a stop signal's default action, for the program under exec as for us. */
static bool own_group_orphaned(void) {
        pid_t own = getpgrp(), session = getsid(0);
        DIR *d = opendir("/proc");
        if (!d)
                return false;
        bool orphaned = true;
        struct dirent *de;
        while (orphaned && (de = readdir(d))) {
                char *end, state;
                long pid = strtol(de->d_name, &end, 10);
                pid_t ppid, pgrp, sid, parent_pgrp, parent_sid;
                if (*end || pid <= 0 || !read_stat((pid_t) pid, &state, &ppid, &pgrp, &sid) || pgrp != own)
                        continue;
                /* A parent we cannot see (hidepid, another user's): assume job control, as stopping is
                 * what exec's program would most likely do. */
                if (!read_stat(ppid, &state, &(pid_t){ 0 }, &parent_pgrp, &parent_sid) ||
                    (parent_sid == session && parent_pgrp != own))
                        orphaned = false;
        }
        closedir(d);
        return orphaned;
}

/* linux/pidfd.h of Linux 6.9, which Debian 12's headers predate. */
#define PIDFD_SIGNAL_PROCESS_GROUP (1u << 2)

/* Passes sig on to the program or, with to_group, to its process group: under exec the program and
 * its children would be in ours, which a terminal (Ctrl-C, Ctrl-Z) and a shell's fg and bg signal
 * as a whole. */
static void signal_program(struct hs_launch *l, int sig, bool to_group) {
        if (to_group && pidfd_send_signal(hs_launch_pidfd(l), sig, NULL, PIDFD_SIGNAL_PROCESS_GROUP) == 0)
                return;
        /* Before Linux 6.9: the same group, the one numbered by the program's pid, while the program
         * is alive and so holds that number. Never the group the program is in now: one that joined
         * another group (the zygote's, its parent's) would have us signal the daemon (a red team's
         * trial, 2026-12-02). */
        if (to_group && errno == EINVAL && hs_launch_signal(l, 0) == 0 && kill(-hs_launch_pid(l), sig) == 0)
                return;
        (void) hs_launch_signal(l, sig);
}

/* The program stopped by sig: the daemon says so, as it alone sees it (its parent). We stop with it,
 * by the same signal, so that our parent (a shell waiting with WUNTRACED) sees the job stop as it
 * would under exec, and its SIGCONT (fg, bg) reaches us and is passed on. By SIGSTOP, which no one
 * can block, the daemon has stopped us itself, in order with the program's continue. */
static void stop_with_program(struct hs_launch *l, int sig) {
        if (sig == SIGSTOP)
                return;
        /* Under exec the program would be in our group: orphaned, the kernel drops the default action
         * of the stop signals but SIGSTOP's, and it would go on. So it goes on. */
        if (own_group_orphaned()) {
                if (is_stopped(hs_launch_pid(l)))
                        (void) hs_launch_signal(l, SIGCONT);
                return;
        }
        /* Pending first, then the program looked at: a continue of it from now on (the daemon's
         * SIGCONT to us) discards the pending stop, and we do not stop for good after it. */
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        signal(sig, SIG_DFL);
        raise(sig);
        if (!is_stopped(hs_launch_pid(l))) {
                (void) sigtimedwait(&one, NULL, &(struct timespec){ 0 }); /* an old report: not ours to pass on */
                return;
        }
        sigprocmask(SIG_UNBLOCK, &one, NULL); /* delivered, unless discarded: we stop here */
        sigprocmask(SIG_BLOCK, &one, NULL);
}

/* Whether the program handles or ignores sig ("SigCgt" and "SigIgn" in /proc/PID/status). */
static bool handles_signal(pid_t pid, int sig) {
        char name[64], buf[4096];
        snprintf(name, sizeof name, "/proc/%d/status", (int) pid);
        _cleanup_close_ int fd = open(name, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
        if (n <= 0)
                return true; /* unknown: pass the signal on as it is */
        buf[n] = '\0';
        uint64_t bit = UINT64_C(1) << (sig - 1);
        for (const char *key = "SigIgn:"; key; key = strcmp(key, "SigIgn:") == 0 ? "SigCgt:" : NULL) {
                const char *at = strstr(buf, key);
                if (!at || strtoull(at + strlen(key), NULL, 16) & bit)
                        return true;
        }
        return false;
}

/* A stop signal (Ctrl-Z) for the program. It leads a process group of the daemon's session, which
 * is not orphaned, so the signal does there what it would do under exec, and we stop once the daemon
 * says it has stopped (one that handles it may stop itself, or not).
 * But when our own group is orphaned, exec's program would be in it: the kernel would drop the
 * signal's default action, and a program that takes the default must go on, as we do. */
static void forward_stop(struct hs_launch *l, int sig, bool to_group) {
        bool takes_default = !handles_signal(hs_launch_pid(l), sig);
        if (takes_default && own_group_orphaned())
                return;
        signal_program(l, sig, to_group);
}

/* Whether the SIGCONT came from the daemon's zygote (the program's parent), which continues us
 * when the program was continued: the program has it already. */
static bool continued_by_daemon(struct hs_launch *l, const struct signalfd_siginfo *si) {
        char state;
        pid_t ppid, pgrp, sid;
        return si->ssi_code == SI_USER && read_stat(hs_launch_pid(l), &state, &ppid, &pgrp, &sid) &&
               (pid_t) si->ssi_pid == ppid;
}

/* Whether the sender ignores the signal it sent us: what one does before it signals a process group
 * it is in, so as not to end itself (timeout(1) before its kill(0, SIGTERM), an interactive shell,
 * which ignores SIGTERM, for `kill %job`). We cannot see a signal's target: this is how a signal to
 * our group, which under exec reaches the program's children too, is told from one to us alone. */
static bool sender_ignores(const struct signalfd_siginfo *si) {
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%u/status", si->ssi_pid);
        _cleanup_fclose_ FILE *f = si->ssi_code == SI_USER && si->ssi_pid > 0 ? fopen(path, "re") : NULL;
        while (f && fgets(line, sizeof line, f))
                if (strncmp(line, "SigIgn:", strlen("SigIgn:")) == 0)
                        return (strtoull(line + strlen("SigIgn:"), NULL, 16) >> (si->ssi_signo - 1)) & 1;
        return false;
}

static void drain_signals(struct hs_launch *l, int sigfd) {
        struct signalfd_siginfo si;
        while (read(sigfd, &si, sizeof si) == (ssize_t) sizeof si) {
                int sig = (int) si.ssi_signo;
                if (sig == SIGCONT && continued_by_daemon(l, &si))
                        continue;
                /* What the kernel sent to our group (the terminal's keys, a hang-up, a resize, an
                 * orphaned group's SIGHUP and SIGCONT), a shell's fg and bg, which continue the whole
                 * job, and what a sender that ignores it sent (to our group, most likely). */
                bool to_group = si.ssi_code == SI_KERNEL || sig == SIGCONT || sender_ignores(&si);
                if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
                        forward_stop(l, sig, to_group);
                else
                        signal_program(l, sig, to_group);
        }
}

/* The daemon vanished while the program runs (its zygote was killed): the program keeps running,
 * and its pidfd, which we hold, says how it ended. */
static _Noreturn void wait_orphan(struct hs_launch *l, int sigfd, char *argv[]) {
        struct pollfd p[2] = { { .fd = hs_launch_pidfd(l), .events = POLLIN }, { .fd = sigfd, .events = POLLIN } };
        for (;;) {
                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        break;
                if (p[0].revents)
                        break;
                if (p[1].revents)
                        drain_signals(l, sigfd);
        }
        int code, status;
        if (hs_launch_orphan_status(l, &code, &status) == 0)
                exit_like(code, status);
        log_error("the daemon went away while %s was running; its exit status is lost", argv[0]);
        exit(255);
}

/* The program runs: forward signals until the daemon reports how it ended. */
static _Noreturn void serve(struct hs_launch *l, int sigfd, char *argv[]) {
        drain_signals(l, sigfd); /* those that arrived while it was starting */
        for (;;) {
                struct pollfd p[2] = { { .fd = hs_launch_fd(l), .events = POLLIN }, { .fd = sigfd, .events = POLLIN } };
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        wait_orphan(l, sigfd, argv);
                }
                if (p[1].revents)
                        drain_signals(l, sigfd);
                if (!p[0].revents)
                        continue;
                int code, status;
                int r = hs_launch_wait(l, &code, &status);
                if (r == 0 && code == CLD_STOPPED) {
                        stop_with_program(l, status);
                        continue;
                }
                if (r == 0)
                        exit_like(code, status);
                if (r == HS_LAUNCH_DECLINED) /* it failed before its main: it never ran */
                        exec_program(argv, hs_launch_reason(l));
                wait_orphan(l, sigfd, argv);
        }
}

static int print_status(void) {
        char *text;
        int r = arg_json ? hs_daemon_status_json(arg_socket, &text) : hs_daemon_status(arg_socket, &text);
        if (r == -EPERM)
                log_error("the daemon refused: it serves only the user who runs it (each user runs their own)");
        else if (r == -EACCES)
                log_error("another user listens on the socket: not asking it (each user runs their own daemon)");
        else if (r == -ENXIO)
                log_error("no socket to ask: XDG_RUNTIME_DIR is not set (set it, or give --socket or $HEADSTART_SOCKET)");
        else if (r == -ETIMEDOUT)
                log_error("the daemon did not answer within %u ms (stopped, or overloaded)",
                          HS_LAUNCH_DEFAULT_TIMEOUT_MS);
        else if (r == -EAGAIN)
                log_error("no zygote of the daemon serves at this moment (the next one is starting): ask again");
        else if (r < 0)
                log_error_errno(r, "cannot get the daemon's status");
        if (r < 0)
                return EXIT_FAILURE;
        size_t len = strlen(text);
        bool ok = write(STDOUT_FILENO, text, len) == (ssize_t) len;
        free(text);
        return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* A shell sets `_` to the file it runs, this client's; under exec the program would find its own
 * there, as given or as found on PATH. Set so for the launch and for exec alike. */
static void name_program_in_underscore(const char *name) {
        const char *underscore = getenv("_");
        struct stat named, self;
        if (!underscore || stat(underscore, &named) < 0 || stat("/proc/self/exe", &self) < 0 ||
            named.st_dev != self.st_dev || named.st_ino != self.st_ino)
                return;
        char path[PATH_MAX];
        if (strchr(name, '/'))
                (void) setenv("_", name, 1);
        else if (hs_find_program(name, path, sizeof path) == 0)
                (void) setenv("_", path, 1);
}

int main(int argc, char *argv[]) {
        log_setup("headstart-run", LOG_LEVEL_INFO);
        const char *d = getenv("HEADSTART_DEBUG");
        debug = d && strcmp(d, "1") == 0;
        sigprocmask(SIG_SETMASK, NULL, &original_mask);

        int first = parse_argv(argc, argv);
        if (first <= 0)
                return first == 0 ? EXIT_SUCCESS : 2;
        if (arg_status)
                return print_status();
        char **prog_argv = argv + first;
        name_program_in_underscore(prog_argv[0]);

        if (arg_exec)
                exec_program(prog_argv, "--exec given");
        char path[PATH_MAX];
        if (hs_find_program(prog_argv[0], path, sizeof path) < 0)
                exec_program(prog_argv, "not found on PATH");
        const char *kept = kept_across_exec();
        if (kept)
                exec_program(prog_argv, kept);
        /* Block every signal before asking, so none is lost before the program can receive it. */
        sigset_t all;
        catchable_signals(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);

        int sigfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sigfd < 0)
                exec_program(prog_argv, "signalfd failed");

        /* With our terminal attached, the daemon serves only what the user said needs no more of it
         * than its stdio (--terminal, or the daemon's `terminal = PROGRAM`); the rest comes back
         * declined and is exec'd. */
        struct hs_launch_options o = { .socket = arg_socket, .sigmask = &original_mask, .timeout_ms = arg_timeout_ms,
                                       .flags = (arg_terminal ? HS_LAUNCH_TERMINAL_OK : 0) |
                                                HS_LAUNCH_EXECS_WHEN_DECLINED | HS_LAUNCH_FOLLOWS_STOPS };
        struct hs_launch *l;
        int r = hs_launch_start(path, prog_argv, environ, &o, &l);
        if (r == 0)
                serve(l, sigfd, prog_argv);
        if (r == HS_LAUNCH_DECLINED)
                exec_program(prog_argv, hs_launch_reason(l));
        if (r == HS_LAUNCH_REJECTED) {
                /* Not our fault or the program's: say it even without HEADSTART_DEBUG. */
                log_error("the daemon rejected the request: %s", hs_launch_reason(l));
                exec_program(prog_argv, NULL);
        }
        /* -ENOENT is also the program's (or its working directory's) own: exec says which. */
        if (r == -ENOENT && access(path, F_OK) != 0)
                exec_program(prog_argv, "the program is not there");
        if (r == -ENOENT || r == -ECONNREFUSED || r == -ENXIO)
                exec_program(prog_argv, "no daemon answers on the socket");
        if (r == -EACCES) {
                /* A socket set for another user (HEADSTART_SOCKET kept by su, or set system-wide), or
                 * a trap: say it even without HEADSTART_DEBUG. */
                log_error("another user listens on the socket: running %s by exec, nothing sent to it", prog_argv[0]);
                exec_program(prog_argv, NULL);
        }
        if (r == -ETIMEDOUT) {
                /* Something is wrong with the daemon (stopped?): say it even without HEADSTART_DEBUG. */
                log_error("the daemon did not answer within %u ms; running %s by exec", arg_timeout_ms, prog_argv[0]);
                exec_program(prog_argv, NULL);
        }
        char why[128];
        snprintf(why, sizeof why, "cannot ask the daemon: %s", strerror(-r));
        exec_program(prog_argv, why);
}
