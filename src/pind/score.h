/* SPDX-License-Identifier: MIT */
/* What each planned range is worth: the launches of the programs that need it, counted with a
 * half-life so that a program not launched for a while gives way to one launched often (the seed
 * paper's decayed reference counts, 002_6b0c2289a6ed3cef.txt section III.2). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "plan.h"

struct launch_counts {
        double *count; /* per program of the plan */
        size_t n;
        double half_life; /* seconds */
        struct timespec decayed_at; /* CLOCK_MONOTONIC */
};

/* A range of the plan and its score. */
struct ranked {
        uint32_t file, range;
        double score;
};

/* Counts for plan, starting from its launch counts, or from old's counts of the programs old had
 * (matched by path: a re-read plan keeps what was learned). Returns 0 or -ENOMEM. */
int launch_counts_init(struct launch_counts *c, const struct pin_plan *plan, const struct pin_plan *old_plan,
                       const struct launch_counts *old, double half_life);
void launch_counts_done(struct launch_counts *c);
/* Halves the counts once per half-life since the last call. */
void launch_counts_decay(struct launch_counts *c);
/* Counts one launch of the program that is the file dev:ino; returns its index or -1 when it is
 * not in the plan. */
int launch_counts_add(struct launch_counts *c, const struct pin_plan *plan, dev_t dev, ino_t ino);

/* Every range of the plan, highest score first (plan order among equals). Returns NULL on ENOMEM. */
struct ranked *rank_ranges(const struct pin_plan *plan, const struct launch_counts *c, size_t *ret_n);
