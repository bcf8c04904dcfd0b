/* SPDX-License-Identifier: MIT */
/* Times launches of one program in several ways, alternating them so that machine noise falls on
 * all alike, and prints one JSON line per launch. The Python side turns these into statistics.
 *
 * Usage: launch-timer --runs N --run-client PATH [--socket PATH] [--daemon NAME=PATH]...
 *                     [--modes exec,run,direct,run@NAME,direct@NAME...] -- PROGRAM ARGS...
 *   exec         posix_spawn of the program itself (the baseline)
 *   run[@NAME]   posix_spawn of headstart-run PROGRAM ARGS... against --socket or daemon NAME
 *   direct[@NAME] a request through libheadstart-client, as a program linking it would make
 * Several daemons (preload, warm, pool...) can so be compared with exec in one alternating run.
 * The program must write the CLOCK_MONOTONIC time at which main starts to $HEADSTART_MARK_FD
 * (bench/apps/mark.h). Time 0 is taken just before the spawn or the request. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "headstart/client.h"
#include "protocol.h"

extern char **environ;

enum how { HOW_EXEC, HOW_RUN, HOW_DIRECT };
#define MAX_MODES 32
#define MAX_DAEMONS 8

struct mode {
        char name[64]; /* as given in --modes; it names the mode in the output */
        enum how how;
        const char *socket;
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
        const char *mode_list;
        struct mode modes[MAX_MODES];
        int nmodes;
        char **argv; /* program and its arguments */
        char *path;  /* the program, absolute */
        int out;     /* where the JSON lines go */
};

static long long now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int spawn_and_wait(const char *file, char **argv, char **envp, int *ret_status) {
        pid_t pid;
        int r = posix_spawn(&pid, file, NULL, NULL, argv, envp);
        if (r != 0)
                return -r;
        while (waitpid(pid, ret_status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return 0;
}

static int run_direct(const struct config *c, const struct mode *m, char **envp, int *ret_status, char *why,
                      size_t size) {
        struct hs_launch_options o = { .socket = m->socket };
        struct hs_launch *l;
        int code = 0, status = 0;
        int r = hs_launch_start(c->path, c->argv, envp, &o, &l);
        if (r == 0)
                r = hs_launch_wait(l, &code, &status);
        if (r > 0)
                snprintf(why, size, "declined: %s", hs_launch_reason(l));
        else if (r < 0)
                snprintf(why, size, "launch: %s", strerror(-r));
        else
                *ret_status = code == CLD_EXITED ? W_EXITCODE(status, 0) : status;
        hs_launch_free(l);
        return r != 0 ? -1 : 0;
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

static long long read_mark(int fd) {
        char buf[64];
        ssize_t n, got = 0;
        while ((n = read(fd, buf + got, sizeof buf - 1 - (size_t) got)) > 0)
                got += n;
        buf[got > 0 ? got : 0] = '\0';
        return got > 0 ? atoll(buf) : -1;
}

static void one_launch(const struct config *c, const struct mode *m, int round) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0 || fcntl(p[1], F_SETFD, 0) < 0)
                exit(EXIT_FAILURE);
        char **envp = env_with_mark(p[1]);
        char why[HS_MAX_TEXT + 64] = "";
        int status = 0, r;

        long long t0 = now_ns();
        if (m->how == HOW_EXEC)
                r = spawn_and_wait(c->path, c->argv, envp, &status);
        else if (m->how == HOW_RUN) {
                int argc = 0;
                while (c->argv[argc])
                        argc++;
                char **argv = calloc((size_t) argc + 4, sizeof(char *));
                argv[0] = (char *) c->run_client;
                argv[1] = (char *) "--socket";
                argv[2] = (char *) m->socket;
                memcpy(argv + 3, c->argv, (size_t) argc * sizeof(char *));
                r = spawn_and_wait(c->run_client, argv, envp, &status);
                free(argv);
        } else
                r = run_direct(c, m, envp, &status, why, sizeof why);
        long long t_exit = now_ns();
        close(p[1]);
        long long t_main = read_mark(p[0]);
        close(p[0]);

        if (r < 0 || t_main < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                dprintf(c->out, "{\"mode\": \"%s\", \"round\": %d, \"error\": \"%s\"}\n", m->name, round,
                        why[0] ? why : t_main < 0 ? "the program did not mark main" : "the program failed");
        else
                dprintf(c->out, "{\"mode\": \"%s\", \"round\": %d, \"to_main_ns\": %lld, \"to_exit_ns\": %lld}\n",
                        m->name, round, t_main - t0, t_exit - t0);
        size_t last = 0;
        while (envp[last + 1])
                last++;
        free(envp[last]); /* the mark variable, the only string we allocated */
        free(envp);
}

static const char *daemon_socket(const struct config *c, const char *name) {
        if (!name)
                return c->socket;
        for (int i = 0; i < c->ndaemons; i++)
                if (strcmp(c->daemons[i].name, name) == 0)
                        return c->daemons[i].socket;
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
                if (strcmp(t, "exec") == 0 && !at)
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
                        fprintf(stderr, "launch-timer: bad mode '%s' (exec, run[@DAEMON], direct[@DAEMON])\n", m->name);
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
                else if (strcmp(argv[i], "--daemon") == 0 && strchr(v, '=') && c->ndaemons < MAX_DAEMONS) {
                        char *name = strdup(v);
                        char *eq = strchr(name, '=');
                        *eq = '\0';
                        c->daemons[c->ndaemons++] = (struct daemon){ name, eq + 1 };
                } else
                        break;
                i++;
        }
        if (i >= argc - 1 || strcmp(argv[i], "--") != 0 || c->runs < 1 || !c->run_client) {
                fprintf(stderr, "usage: launch-timer --runs N --run-client PATH [--socket PATH] [--daemon NAME=PATH]... "
                                "[--modes exec,run,direct,run@NAME,direct@NAME] -- PROGRAM ARGS...\n");
                return -1;
        }
        if (parse_modes(c, c->mode_list ? c->mode_list : "exec,run,direct") < 0)
                return -1;
        c->argv = argv + i + 1;
        c->path = realpath(c->argv[0], NULL);
        if (!c->path) {
                fprintf(stderr, "launch-timer: %s: %s\n", c->argv[0], strerror(errno));
                return -1;
        }
        return 0;
}

static volatile sig_atomic_t stop_requested;

static void on_sigterm(int sig) {
        (void) sig;
        stop_requested = 1;
}

int main(int argc, char *argv[]) {
        struct config c = { 0 };
        if (parse_args(&c, argc, argv) < 0)
                return 2;
        /* SIGTERM ends the run after the launch in progress, so every launch made is reported. */
        struct sigaction sa = { .sa_handler = on_sigterm };
        sigaction(SIGTERM, &sa, NULL);

        /* Results go to our stdout; the programs get /dev/null for all three standard fds. */
        c.out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        int null = open("/dev/null", O_RDWR);
        for (int fd = 0; fd <= 2; fd++)
                dup2(null, fd);
        close(null);

        for (int round = 0; round < c.runs && !stop_requested; round++)
                for (int k = 0; k < c.nmodes && !stop_requested; k++)
                        /* Rotate which mode goes first, so no mode always follows another. */
                        one_launch(&c, &c.modes[(k + round) % c.nmodes], round);
        return 0;
}
