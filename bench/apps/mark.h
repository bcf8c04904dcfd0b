/* SPDX-License-Identifier: MIT */
/* Marks the moment main starts, for the launch benchmarks: when HEADSTART_MARK_FD names an fd,
 * the CLOCK_MONOTONIC time in nanoseconds goes there as one decimal line. Nothing otherwise. */
#pragma once

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
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%lld\n", (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec);
        (void) !write(atoi(fd), buf, (size_t) n);
}
