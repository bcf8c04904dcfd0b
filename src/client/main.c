/* SPDX-License-Identifier: MIT */
/* headstart-run PROGRAM [ARGS...]: runs PROGRAM through headstartd, or execs it when the daemon
 * cannot serve it. Either way the caller sees what exec would have given it: the program's output,
 * its exit status or the signal that killed it, and every signal sent to us reaches the program. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "client.h"
#include "log.h"
#include "macro.h"

extern char **environ;

static const char *arg_socket = NULL;
static bool arg_exec = false;

/* Set once in main, read-only afterwards. */
static bool debug = false;
static sigset_t original_mask;

static void help(void) {
        static const char text[] =
                "Usage: headstart-run [--socket PATH] [--exec] PROGRAM [ARGS...]\n"
                "Runs PROGRAM through headstartd when it can, and by exec otherwise.\n\n"
                "  --socket PATH   the daemon's socket (default $HEADSTART_SOCKET,\n"
                "                  else $XDG_RUNTIME_DIR/headstart/socket)\n"
                "  --exec          do not ask the daemon: exec PROGRAM directly\n"
                "Set HEADSTART_DEBUG=1 to see why a launch went to exec.\n";
        (void) !write(STDOUT_FILENO, text, sizeof text - 1);
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
                else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
                        arg_socket = argv[++i];
                else if (strncmp(argv[i], "--socket=", 9) == 0)
                        arg_socket = argv[i] + 9;
                else if (strcmp(argv[i], "--help") == 0) {
                        help();
                        return 0;
                } else if (strcmp(argv[i], "--version") == 0) {
                        static const char v[] = "headstart-run " HEADSTART_VERSION "\n";
                        (void) !write(STDOUT_FILENO, v, sizeof v - 1);
                        return 0;
                } else {
                        log_error("unknown option %s (try --help)", argv[i]);
                        return -1;
                }
        }
        if (i >= argc) {
                log_error("no program given (try --help)");
                return -1;
        }
        return i;
}

/* The file execvp(3) would run: the name itself if it has a slash, else the first executable
 * regular file of that name on PATH. When unsure we return false and exec decides. */
static bool find_program(const char *name, char *buf, size_t size) {
        if (strchr(name, '/')) {
                if (name[0] == '/')
                        return snprintf(buf, size, "%s", name) < (int) size;
                char cwd[PATH_MAX];
                return getcwd(cwd, sizeof cwd) && snprintf(buf, size, "%s/%s", cwd, name) < (int) size;
        }
        const char *path = getenv("PATH");
        if (!path)
                path = "/bin:/usr/bin"; /* glibc's default when PATH is unset */
        for (const char *p = path;; p++) {
                const char *end = strchrnul(p, ':');
                int len = (int) (end - p);
                int n = len ? snprintf(buf, size, "%.*s/%s", len, p, name) : snprintf(buf, size, "./%s", name);
                if (n > 0 && n < (int) size && access(buf, X_OK) == 0) {
                        if (buf[0] != '/') {
                                char rel[PATH_MAX];
                                snprintf(rel, sizeof rel, "%s", buf);
                                return find_program(rel, buf, size);
                        }
                        return true;
                }
                if (!*end)
                        return false;
                p = end;
        }
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

static bool has_controlling_terminal(void) {
        int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

struct session {
        int sock, sigfd, pidfd;
        int pending[64]; /* signals that arrived before the pidfd */
        unsigned npending;
};

static void forward_signal(struct session *s, int sig) {
        if (s->pidfd < 0) {
                if (s->npending < ELEMENTSOF(s->pending))
                        s->pending[s->npending++] = sig;
                return;
        }
        (void) pidfd_send_signal(s->pidfd, sig, NULL, 0);
}

static void drain_signals(struct session *s) {
        struct signalfd_siginfo si;
        while (read(s->sigfd, &si, sizeof si) == (ssize_t) sizeof si)
                forward_signal(s, (int) si.ssi_signo);
}

/* The daemon vanished while the program runs: it keeps running, but its status is lost. */
static _Noreturn void wait_orphan(struct session *s, char *argv[]) {
        log_error("the daemon went away while %s was running; its exit status is lost", argv[0]);
        struct pollfd p[2] = { { .fd = s->pidfd, .events = POLLIN }, { .fd = s->sigfd, .events = POLLIN } };
        for (;;) {
                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        break;
                if (p[0].revents)
                        break;
                if (p[1].revents)
                        drain_signals(s);
        }
        exit(255);
}

static _Noreturn void serve(struct session *s, char *argv[]) {
        for (;;) {
                struct pollfd p[2] = { { .fd = s->sock, .events = POLLIN }, { .fd = s->sigfd, .events = POLLIN } };
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        exec_program(argv, "poll failed");
                }
                if (p[1].revents)
                        drain_signals(s);
                if (!p[0].revents)
                        continue;

                struct hs_reply reply;
                int r = hs_client_read_reply(s->sock, &reply);
                if (r < 0) {
                        if (s->pidfd >= 0)
                                wait_orphan(s, argv);
                        exec_program(argv, "the daemon closed the connection");
                }
                switch (reply.type) {
                case HS_MSG_LAUNCHED:
                        s->pidfd = reply.pidfd;
                        for (unsigned i = 0; i < s->npending; i++)
                                forward_signal(s, s->pending[i]);
                        s->npending = 0;
                        break;
                case HS_MSG_EXITED:
                        exit_like(reply.code, reply.status);
                case HS_MSG_DECLINED:
                        exec_program(argv, reply.text);
                case HS_MSG_ERROR:
                        /* Not our fault or the program's: say it even without HEADSTART_DEBUG. */
                        log_error("the daemon rejected the request: %s", reply.text);
                        exec_program(argv, NULL);
                default:
                        exec_program(argv, "unexpected reply from the daemon");
                }
        }
}

int main(int argc, char *argv[]) {
        log_setup("headstart-run", LOG_LEVEL_INFO);
        const char *d = getenv("HEADSTART_DEBUG");
        debug = d && strcmp(d, "1") == 0;
        sigprocmask(SIG_SETMASK, NULL, &original_mask);

        int first = parse_argv(argc, argv);
        if (first <= 0)
                return first == 0 ? EXIT_SUCCESS : 2;
        char **prog_argv = argv + first;

        if (arg_exec)
                exec_program(prog_argv, "--exec given");
        char path[PATH_MAX];
        if (!find_program(prog_argv[0], path, sizeof path))
                exec_program(prog_argv, "not found on PATH");
        /* A served program cannot have our terminal as its controlling terminal (it is in another
         * session), so /dev/tty and job control would not work: such launches go to exec. */
        if (has_controlling_terminal())
                exec_program(prog_argv, "a controlling terminal is attached");

        /* Block every signal before asking, so none is lost before the program can receive it. */
        sigset_t all;
        catchable_signals(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);

        struct session s = { .sock = -1, .pidfd = -1 };
        s.sock = hs_client_connect(arg_socket);
        if (s.sock < 0)
                exec_program(prog_argv, "no daemon answers on the socket");
        s.sigfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
        if (s.sigfd < 0)
                exec_program(prog_argv, "signalfd failed");
        int r = hs_client_send_launch(s.sock, path, prog_argv, environ, &original_mask);
        /* A daemon that refuses us (another user, say) replies and hangs up, which can break our
         * write: read what it said before going to exec. */
        if (r == -EPIPE || r == -ECONNRESET)
                serve(&s, prog_argv);
        if (r < 0) {
                char why[128];
                snprintf(why, sizeof why, "cannot send the request: %s", strerror(-r));
                exec_program(prog_argv, why);
        }
        serve(&s, prog_argv);
}
