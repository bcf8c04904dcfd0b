/* SPDX-License-Identifier: MIT */
#include "throwaway.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
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

_Noreturn void throwaway_report(int report, char verdict, const char *detail) {
        char buf[1 + 256];
        int n = snprintf(buf, sizeof buf, "%c%s", verdict, detail ? detail : "");
        (void) !write(report, buf, (size_t) n < sizeof buf ? (size_t) n : sizeof buf - 1);
        _exit(0);
}

/* Reads the child's whole report: its verdict, then its detail. 0 when it wrote none. */
static int read_report(int fd, char *detail, size_t size) {
        char buf[1 + 256];
        size_t n = 0;
        for (;;) {
                ssize_t k = read(fd, buf + n, sizeof buf - 1 - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0 || (n += (size_t) k) == sizeof buf - 1)
                        break;
        }
        buf[n] = '\0';
        snprintf(detail, size, "%s", n > 0 ? buf + 1 : "");
        return n > 0 ? (unsigned char) buf[0] : 0;
}

int throwaway_trial(void (*trial)(void *arg, int report), void *arg, char *detail, size_t size) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = throwaway_fork();
        if (pid < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                return r;
        }
        if (pid == 0) {
                close(p[0]);
                trial(arg, p[1]);
                _exit(0); /* it reports with throwaway_report, which ends the child */
        }
        close(p[1]);
        int verdict = read_report(p[0], detail, size);
        close(p[0]);
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (WIFSIGNALED(status)) {
                int sig = WTERMSIG(status);
                snprintf(detail, size, "%s", sig == SIGALRM ? "the deadline" : strsignal(sig));
                return THROWAWAY_KILLED;
        }
        if (!verdict) {
                snprintf(detail, size, "exit status %d", WEXITSTATUS(status));
                return THROWAWAY_ENDED;
        }
        return verdict;
}
