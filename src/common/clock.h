/* SPDX-License-Identifier: MIT */
/* The one clock of deadlines and timers: CLOCK_MONOTONIC, which no one can set. */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

/* For the log's durations of the daemon's own steps. */
static inline uint64_t now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}
