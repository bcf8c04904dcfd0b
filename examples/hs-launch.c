/* SPDX-License-Identifier: MIT */
/* hs-launch: how a program starts others through libheadstart-client. It gives the program fds 0-2
 * of its own, the working directory and environment it is told, forwards one signal if asked, and
 * exits as the program did. When the daemon declines, it runs the program itself.
 *
 *   cc hs-launch.c $(pkg-config --cflags --libs headstart-client) -o hs-launch
 *   hs-launch [--cwd DIR] [--signal N] [--env NAME=VALUE]... PROGRAM [ARGS...]   (PROGRAM: absolute path) */
#include <headstart/client.h>

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int run_it_ourselves(char *argv[], char *envp[]) {
        pid_t pid;
        int status;
        if (posix_spawn(&pid, argv[0], NULL, NULL, argv, envp) != 0 || waitpid(pid, &status, 0) < 0)
                return 127;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char *argv[]) {
        const char *cwd = NULL;
        int sig = 0;
        char *envp[64] = { NULL };
        int nenv = 0, i = 1;
        for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
                if (strcmp(argv[i], "--cwd") == 0)
                        cwd = argv[i + 1];
                else if (strcmp(argv[i], "--signal") == 0)
                        sig = atoi(argv[i + 1]);
                else if (strcmp(argv[i], "--env") == 0 && nenv < 63)
                        envp[nenv++] = argv[i + 1];
                else
                        break;
        }
        if (i >= argc) {
                fprintf(stderr, "usage: hs-launch [--cwd DIR] [--signal N] [--env NAME=VALUE]... PROGRAM [ARGS...]\n");
                return 2;
        }

        static const int fds[] = { STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO };
        struct hs_launch_options o = { .cwd = cwd, .fds = fds, .nfds = 3 };
        struct hs_launch *l;
        int code = 0, status = 0;
        int r = hs_launch_start(argv[i], argv + i, envp, &o, &l);
        if (r == 0) {
                fprintf(stderr, "hs-launch: started pid %d\n", (int) hs_launch_pid(l));
                if (sig) {
                        r = hs_launch_signal(l, sig);
                        if (r == -ESRCH) /* it ended before the signal came: its status says how */
                                r = 0;
                }
                if (r == 0)
                        r = hs_launch_wait(l, &code, &status);
        }
        if (r == HS_LAUNCH_DECLINED || (r < 0 && !l)) {
                /* Not started, or failed before its main: it never ran, so running it is safe. */
                fprintf(stderr, "hs-launch: %s; running it ourselves\n", l ? hs_launch_reason(l) : strerror(-r));
                hs_launch_free(l);
                return run_it_ourselves(argv + i, envp);
        }
        if (r != 0) {
                fprintf(stderr, "hs-launch: %s\n", r > 0 ? hs_launch_reason(l) : strerror(-r));
                hs_launch_free(l);
                return 1;
        }
        hs_launch_free(l);
        fprintf(stderr, "hs-launch: %s %d\n", code == CLD_EXITED ? "exit status" : "killed by signal", status);
        return code == CLD_EXITED ? status : 128 + status;
}
