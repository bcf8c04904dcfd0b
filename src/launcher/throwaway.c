/* SPDX-License-Identifier: MIT */
#include "throwaway.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

static unsigned deadline_s = THROWAWAY_DEFAULT_DEADLINE_S;

void throwaway_set_deadline(unsigned seconds) {
        deadline_s = seconds;
}

unsigned throwaway_deadline(void) {
        return deadline_s;
}

pid_t throwaway_fork(void) {
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid != 0)
                return pid;
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != parent) /* it ended before the line above */
                _exit(127);
        /* A zygote blocks the signals it reads from its signalfd, SIGALRM among them. */
        sigset_t alarm_only;
        sigemptyset(&alarm_only);
        sigaddset(&alarm_only, SIGALRM);
        (void) signal(SIGALRM, SIG_DFL);
        (void) sigprocmask(SIG_UNBLOCK, &alarm_only, NULL);
        alarm(deadline_s);
        return 0;
}
