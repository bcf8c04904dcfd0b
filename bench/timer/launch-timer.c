/* SPDX-License-Identifier: MIT */
/* Times launches of one program in several ways, alternating them so that machine noise falls on
 * all alike, and prints one JSON line per launch. The Python side turns these into statistics.
 *
 * Usage: launch-timer --runs N --socket PATH --run-client PATH [--modes exec,run,direct] -- PROGRAM ARGS...
 *   exec    posix_spawn of the program itself (the baseline)
 *   run     posix_spawn of headstart-run PROGRAM ARGS...
 *   direct  a request straight over the socket, as a program linking the client library would
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

enum mode { MODE_EXEC, MODE_RUN, MODE_DIRECT, MODE_COUNT };
static const char *const mode_names[MODE_COUNT] = { "exec", "run", "direct" };

struct config {
        int runs;
        const char *socket;
        const char *run_client;
        bool modes[MODE_COUNT];
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

static int run_direct(const struct config *c, char **envp, int *ret_status, char *why, size_t size) {
        struct hs_launch_options o = { .socket = c->socket };
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

static void one_launch(const struct config *c, enum mode m, int round) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0 || fcntl(p[1], F_SETFD, 0) < 0)
                exit(EXIT_FAILURE);
        char **envp = env_with_mark(p[1]);
        char why[HS_MAX_TEXT + 64] = "";
        int status = 0, r;

        long long t0 = now_ns();
        if (m == MODE_EXEC)
                r = spawn_and_wait(c->path, c->argv, envp, &status);
        else if (m == MODE_RUN) {
                int argc = 0;
                while (c->argv[argc])
                        argc++;
                char **argv = calloc((size_t) argc + 4, sizeof(char *));
                argv[0] = (char *) c->run_client;
                argv[1] = (char *) "--socket";
                argv[2] = (char *) c->socket;
                memcpy(argv + 3, c->argv, (size_t) argc * sizeof(char *));
                r = spawn_and_wait(c->run_client, argv, envp, &status);
                free(argv);
        } else
                r = run_direct(c, envp, &status, why, sizeof why);
        long long t_exit = now_ns();
        close(p[1]);
        long long t_main = read_mark(p[0]);
        close(p[0]);

        if (r < 0 || t_main < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                dprintf(c->out, "{\"mode\": \"%s\", \"round\": %d, \"error\": \"%s\"}\n", mode_names[m], round,
                        why[0] ? why : t_main < 0 ? "the program did not mark main" : "the program failed");
        else
                dprintf(c->out, "{\"mode\": \"%s\", \"round\": %d, \"to_main_ns\": %lld, \"to_exit_ns\": %lld}\n",
                        mode_names[m], round, t_main - t0, t_exit - t0);
        size_t last = 0;
        while (envp[last + 1])
                last++;
        free(envp[last]); /* the mark variable, the only string we allocated */
        free(envp);
}

static int parse_modes(struct config *c, const char *list) {
        char *copy = strdup(list), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int found = 0;
                for (int m = 0; m < MODE_COUNT; m++)
                        if (strcmp(t, mode_names[m]) == 0)
                                { c->modes[m] = true; found = 1; }
                if (!found) {
                        fprintf(stderr, "launch-timer: unknown mode '%s' (exec, run, direct)\n", t);
                        return -1;
                }
        }
        free(copy);
        return 0;
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
                else if (strcmp(argv[i], "--modes") == 0) {
                        if (parse_modes(c, v) < 0)
                                return -1;
                } else
                        break;
                i++;
        }
        if (i >= argc - 1 || strcmp(argv[i], "--") != 0 || c->runs < 1 || !c->socket || !c->run_client) {
                fprintf(stderr, "usage: launch-timer --runs N --socket PATH --run-client PATH "
                                "[--modes exec,run,direct] -- PROGRAM ARGS...\n");
                return -1;
        }
        c->argv = argv + i + 1;
        c->path = realpath(c->argv[0], NULL);
        if (!c->path) {
                fprintf(stderr, "launch-timer: %s: %s\n", c->argv[0], strerror(errno));
                return -1;
        }
        return 0;
}

int main(int argc, char *argv[]) {
        struct config c = { 0 };
        if (parse_args(&c, argc, argv) < 0)
                return 2;
        if (!c.modes[MODE_EXEC] && !c.modes[MODE_RUN] && !c.modes[MODE_DIRECT])
                c.modes[MODE_EXEC] = c.modes[MODE_RUN] = c.modes[MODE_DIRECT] = true;

        /* Results go to our stdout; the programs get /dev/null for all three standard fds. */
        c.out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        int null = open("/dev/null", O_RDWR);
        for (int fd = 0; fd <= 2; fd++)
                dup2(null, fd);
        close(null);

        for (int round = 0; round < c.runs; round++)
                for (int k = 0; k < MODE_COUNT; k++) {
                        /* Rotate which mode goes first, so no mode always follows another. */
                        enum mode m = (enum mode) ((k + round) % MODE_COUNT);
                        if (c.modes[m])
                                one_launch(&c, m, round);
                }
        return 0;
}
