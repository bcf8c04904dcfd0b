/* SPDX-License-Identifier: MIT */
/* Unit tests of launch-settle.h: a program just launched is not settled until a look finds it
 * using little CPU, and one that has ended is settled at once, whenever the daemon looks (it had
 * said a launch of `gedit --help`, ended, was "still starting" until the next look's time). Prints
 * "N passed, N failed". */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "launch-settle.h"

static pid_t spinning_child(void) {
        pid_t pid = fork();
        if (pid == 0)
                for (;;) {
                }
        return pid;
}

int main(void) {
        const uint64_t interval = 100;
        pid_t pid = spinning_child();
        if (pid < 0)
                return perror("fork"), 1;
        struct launch_settle l;
        launch_settle_start(&l, pid, 1000);
        CHECK(l.pid == pid);
        CHECK(!launch_settle_look(&l, 1000 + interval / 2, interval)); /* running, and too soon to tell */

        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        CHECK(launch_settle_look(&l, 1000 + interval / 2, interval)); /* ended: before the next look's time */
        CHECK(l.pid == 0);

        struct launch_settle gone;
        launch_settle_start(&gone, pid, 2000); /* the pid of a process already gone */
        CHECK(launch_settle_look(&gone, 2000, interval));
        printf("%d passed, %d failed\n", passed, failed);
        return failed != 0;
}
