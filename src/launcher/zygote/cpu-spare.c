/* SPDX-License-Identifier: MIT */
#include "cpu-spare.h"

#include <stdio.h>
#include <unistd.h>

#include "macro.h"

/* The first line of /proc/stat: the ticks of all CPUs in user, nice, system, idle, iowait, irq,
 * softirq and steal time. Waiting for the disk (iowait) is idle for a CPU. */
static bool read_ticks(uint64_t *idle, uint64_t *total) {
        _cleanup_fclose_ FILE *f = fopen("/proc/stat", "re");
        unsigned long long v[8] = { 0 };
        if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                         &v[6], &v[7]) != 8)
                return false;
        *idle = v[3] + v[4];
        *total = 0;
        for (size_t i = 0; i < ELEMENTSOF(v); i++)
                *total += v[i];
        return true;
}

static bool spare_since_last(struct cpu_spare *c) {
        uint64_t idle, total;
        if (!read_ticks(&idle, &total))
                return true;
        bool seen = c->seen && total > c->total;
        uint64_t didle = idle - c->idle, dtotal = total - c->total;
        c->idle = idle;
        c->total = total;
        c->seen = true;
        if (!seen)
                return true;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        /* At least dtotal / ncpu idle: a whole CPU's time (half the machine's on a single CPU). */
        return didle * (uint64_t) (ncpu > 2 ? ncpu : 2) >= dtotal;
}

static void restart(struct cpu_spare *c, uint64_t now_ms) {
        c->seen = read_ticks(&c->idle, &c->total);
        c->spare = !c->seen; /* counters it cannot read never make anyone wait */
        c->looked_ms = now_ms;
}

bool cpu_spare_look(struct cpu_spare *c, uint64_t since_ms, uint64_t now_ms, uint64_t interval_ms) {
        if (c->looked_ms < since_ms)
                restart(c, now_ms);
        if (!c->seen || now_ms >= c->looked_ms + interval_ms) {
                c->spare = spare_since_last(c);
                c->looked_ms = now_ms;
        }
        return c->spare;
}
