/* SPDX-License-Identifier: MIT */
#include "signals.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/signalfd.h>

static bool is_fault_signal(int sig) {
        return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP || sig == SIGSYS;
}

int zygote_signals_open(void) {
        sigset_t mask;
        sigfillset(&mask); /* glibc leaves out its own two internal signals */
        for (int sig = 1; sig < NSIG; sig++)
                if (is_fault_signal(sig) || sig == SIGKILL || sig == SIGSTOP)
                        sigdelset(&mask, sig);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        signal(SIGPIPE, SIG_IGN);
        int fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        return fd < 0 ? -errno : fd;
}

void zygote_stop_at_once(bool at_once) {
        sigset_t term;
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        (void) sigprocmask(at_once ? SIG_UNBLOCK : SIG_BLOCK, &term, NULL);
}

int stop_signals_open(void) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        signal(SIGPIPE, SIG_IGN);
        int fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        return fd < 0 ? -errno : fd;
}
