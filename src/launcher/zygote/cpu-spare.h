/* SPDX-License-Identifier: MIT */
/* Whether the machine has a CPU to spare: from the kernel's CPU time counters (/proc/stat), over
 * the time between two looks. At boot a device's CPUs are the bottleneck of its home screen's first
 * frame, and a toolkit started ahead for a later launch would take from it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct cpu_spare {
        uint64_t idle, total; /* the counters at the last look, in clock ticks summed over the CPUs */
        bool seen;            /* there was a last look */
        uint64_t looked_ms;   /* when (CLOCK_MONOTONIC ms) */
        bool spare;           /* what it found */
};

/* Whether, between the last look and now, the CPUs were idle for at least one CPU's time, or half
 * the machine's when it has a single CPU; a look younger than interval_ms is answered again rather
 * than taken anew, as too few clock ticks would have passed. The first look, and a machine whose
 * counters cannot be read, count as spare: the caller never waits on what it cannot see. A last look
 * from before since_ms (a launch: the idle time before it would vouch for the CPUs the program just
 * started is using) is not taken: a new look starts from now, and the answer is no until it is
 * taken, interval_ms later. */
bool cpu_spare_look(struct cpu_spare *c, uint64_t since_ms, uint64_t now_ms, uint64_t interval_ms);
