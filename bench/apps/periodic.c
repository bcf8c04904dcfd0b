/* SPDX-License-Identifier: MIT */
/* A periodic task, as a sensor loop or an audio callback runs: every PERIOD_US it wakes up (an
 * absolute CLOCK_MONOTONIC deadline), works WORK_US, and sleeps again. It prints when main began
 * (CLOCK_MONOTONIC ns, so that whoever launched it can tell the launch latency) and how late each
 * wake-up came: the period jitter, as percentiles in microseconds.
 *   periodic [PERIODS [PERIOD_US [WORK_US]]]    (default 1000 1000 100) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int compare(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
        return (x > y) - (x < y);
}

int main(int argc, char **argv) {
        int64_t started = now_ns();
        long periods = argc > 1 ? atol(argv[1]) : 1000, period_us = argc > 2 ? atol(argv[2]) : 1000,
             work_us = argc > 3 ? atol(argv[3]) : 100;
        if (periods < 1 || period_us < 1 || work_us < 0 || work_us >= period_us) {
                fprintf(stderr, "usage: periodic [PERIODS [PERIOD_US [WORK_US]]], WORK_US below PERIOD_US\n");
                return 2;
        }
        printf("main %lld\n", (long long) started);
        fflush(stdout);
        int64_t *late = malloc((size_t) periods * sizeof *late);
        if (!late)
                return 1;
        int64_t next = now_ns() + period_us * 1000;
        for (long i = 0; i < periods; i++) {
                struct timespec at = { .tv_sec = next / 1000000000, .tv_nsec = next % 1000000000 };
                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) != 0)
                        ;
                int64_t woke = now_ns();
                late[i] = woke - next;
                while (now_ns() - woke < work_us * 1000) /* the work of one period */
                        ;
                next += period_us * 1000;
        }
        qsort(late, (size_t) periods, sizeof *late, compare);
        printf("late_us p50 %.1f p99 %.1f max %.1f\n", (double) late[periods / 2] / 1e3,
               (double) late[periods * 99 / 100] / 1e3, (double) late[periods - 1] / 1e3);
        free(late);
        return 0;
}
