/* SPDX-License-Identifier: MIT */
/* A launcher that starts a program through the client library and, unless told to wait for it,
 * ends without waiting, as a home screen that restarts would. Prints "started PID", "declined: WHY"
 * or "error ERRNO", then with --wait what each of two waits returned ("ended R CODE STATUS"), and
 * if the daemon went away, how the program ended by its pidfd ("orphan R CODE STATUS").
 *   library-launcher [--outlive] [--wait] [--flags N] [--big-args COUNT SIZE] PROGRAM [ARGS...]
 * --big-args adds COUNT arguments of SIZE bytes each (exec's limits). */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "headstart/client.h"

extern char **environ;

int main(int argc, char **argv) {
        struct hs_launch_options o = { 0 };
        size_t count = 0, size = 0;
        bool wait = false;
        int i = 1;
        for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
                if (strcmp(argv[i], "--outlive") == 0)
                        o.flags |= HS_LAUNCH_OUTLIVES_CALLER;
                else if (strcmp(argv[i], "--wait") == 0)
                        wait = true;
                else if (strcmp(argv[i], "--flags") == 0 && i + 1 < argc)
                        o.flags |= (unsigned) strtoul(argv[++i], NULL, 0);
                else if (strcmp(argv[i], "--big-args") == 0 && i + 2 < argc) {
                        count = strtoul(argv[++i], NULL, 0);
                        size = strtoul(argv[++i], NULL, 0);
                }
        }
        if (i >= argc)
                return 2;
        char **args = calloc((size_t) (argc - i) + count + 1, sizeof *args);
        char *big = malloc(size + 1);
        if (!args || !big)
                return 1;
        memset(big, 'x', size);
        big[size] = '\0';
        size_t n = 0;
        for (int k = i; k < argc; k++)
                args[n++] = argv[k];
        for (size_t k = 0; k < count; k++)
                args[n++] = big;
        struct hs_launch *l;
        int r = hs_launch_start(argv[i], args, environ, &o, &l);
        if (r == 0)
                printf("started %d\n", (int) hs_launch_pid(l));
        else if (r > 0)
                printf("declined: %s\n", hs_launch_reason(l));
        else
                printf("error %d\n", -r);
        fflush(stdout); /* before the wait: the caller reads it while the program runs */
        for (int k = 0; r == 0 && wait && k < 2; k++) {
                int code = 0, status = 0, w = hs_launch_wait(l, &code, &status);
                printf("ended %d %d %d\n", w, code, status);
                fflush(stdout);
                if (w != -ECONNRESET)
                        continue;
                /* The daemon went away: the program's pidfd says when it ends, and how. */
                struct pollfd p = { .fd = hs_launch_pidfd(l), .events = POLLIN };
                (void) poll(&p, 1, -1);
                w = hs_launch_orphan_status(l, &code, &status);
                printf("orphan %d %d %d\n", w, code, status);
                break;
        }
        return 0; /* the handle is left to the process's end, which closes its connection */
}
