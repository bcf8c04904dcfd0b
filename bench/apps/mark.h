/* SPDX-License-Identifier: MIT */
/* Marks the moment main starts, for the launch benchmarks: when HEADSTART_MARK_FD names an fd,
 * the CLOCK_MONOTONIC time in nanoseconds goes there as one decimal line. Nothing otherwise.
 * With HEADSTART_MARK_STOP=1 the line also carries the pid and the process then stops itself, so
 * that `headstart bench` can read its memory as it enters main and continue it (SIGCONT). */
#pragma once

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline void headstart_mark_main(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        const char *fd = getenv("HEADSTART_MARK_FD");
        if (!fd)
                return;
        const char *stop = getenv("HEADSTART_MARK_STOP");
        int stopping = stop && stop[0] == '1';
        char buf[64];
        int n = stopping ? snprintf(buf, sizeof buf, "%lld %d\n", (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec,
                                    (int) getpid())
                         : snprintf(buf, sizeof buf, "%lld\n", (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec);
        (void) !write(atoi(fd), buf, (size_t) n);
        if (stopping)
                raise(SIGSTOP);
}
