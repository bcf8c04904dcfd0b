/* SPDX-License-Identifier: MIT */
/* Whether a program just launched has finished starting: it used less than a quarter of one CPU's
 * time between two looks (its user and system time, /proc/PID/stat). Until then the user waits for
 * its first frame, and a toolkit started ahead for its next launch takes CPU time from it and from
 * the compositor that draws that frame, even when a CPU looks spare: on the two-CPU device, a GTK
 * program single-threaded to its frame left one CPU idle, and the next child, started 0.3 s into a
 * 0.7 s launch, ran beside the rest of it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct launch_settle {
        pid_t pid;          /* the program's; 0: none to wait for */
        uint64_t ticks;     /* its CPU time at the last look, in clock ticks */
        uint64_t looked_ms; /* when (CLOCK_MONOTONIC ms) */
        bool settled;       /* what the last look found */
};

/* Starts watching the program launched as pid at now_ms: not settled until a look interval_ms or
 * more later finds it so. */
void launch_settle_start(struct launch_settle *l, pid_t pid, uint64_t now_ms);

/* Whether the program has settled: between the last look and now (a look younger than interval_ms
 * is answered again), or for good once it has ended or cannot be read (never waited on), which every
 * call looks at. */
bool launch_settle_look(struct launch_settle *l, uint64_t now_ms, uint64_t interval_ms);
