/* SPDX-License-Identifier: MIT */
#include "score.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static double seconds_since(const struct timespec *t, struct timespec *now) {
        clock_gettime(CLOCK_MONOTONIC, now);
        return (double) (now->tv_sec - t->tv_sec) + (double) (now->tv_nsec - t->tv_nsec) / 1e9;
}

int launch_counts_init(struct launch_counts *c, const struct pin_plan *plan, const struct pin_plan *old_plan,
                       const struct launch_counts *old, double half_life) {
        *c = (struct launch_counts){ .n = plan->nprograms, .half_life = half_life };
        clock_gettime(CLOCK_MONOTONIC, &c->decayed_at);
        c->count = calloc(plan->nprograms ? plan->nprograms : 1, sizeof *c->count);
        if (!c->count)
                return -ENOMEM;
        for (size_t i = 0; i < plan->nprograms; i++) {
                c->count[i] = plan->programs[i].launches;
                for (size_t j = 0; old && j < old->n && j < old_plan->nprograms; j++)
                        if (strcmp(old_plan->programs[j].path, plan->programs[i].path) == 0)
                                c->count[i] = old->count[j];
        }
        return 0;
}

void launch_counts_done(struct launch_counts *c) {
        free(c->count);
        *c = (struct launch_counts){ 0 };
}

void launch_counts_decay(struct launch_counts *c) {
        struct timespec now;
        double factor = exp2(-seconds_since(&c->decayed_at, &now) / c->half_life);
        for (size_t i = 0; i < c->n; i++)
                c->count[i] *= factor;
        c->decayed_at = now;
}

int launch_counts_add(struct launch_counts *c, const struct pin_plan *plan, dev_t dev, ino_t ino) {
        for (size_t i = 0; i < c->n; i++) {
                struct stat st;
                if (stat(plan->programs[i].path, &st) == 0 && st.st_dev == dev && st.st_ino == ino) {
                        c->count[i] += 1;
                        return (int) i;
                }
        }
        return -1;
}

static int cmp_score(const void *a, const void *b) {
        const struct ranked *x = a, *y = b;
        if (x->score != y->score)
                return x->score < y->score ? 1 : -1;
        if (x->file != y->file)
                return x->file < y->file ? -1 : 1;
        return x->range < y->range ? -1 : x->range > y->range;
}

struct ranked *rank_ranges(const struct pin_plan *plan, const struct launch_counts *c, size_t *ret_n) {
        size_t n = 0;
        for (size_t i = 0; i < plan->nfiles; i++)
                n += plan->files[i].nranges;
        struct ranked *r = calloc(n ? n : 1, sizeof *r);
        if (!r)
                return NULL;
        size_t k = 0;
        for (size_t i = 0; i < plan->nfiles; i++)
                for (size_t j = 0; j < plan->files[i].nranges; j++) {
                        const struct pin_range *range = &plan->files[i].ranges[j];
                        double score = 0;
                        for (size_t p = 0; p < range->nprograms; p++)
                                score += c->count[range->programs[p]];
                        r[k++] = (struct ranked){ (uint32_t) i, (uint32_t) j, score };
                }
        qsort(r, n, sizeof *r, cmp_score);
        *ret_n = n;
        return r;
}
