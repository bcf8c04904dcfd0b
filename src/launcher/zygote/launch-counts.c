/* SPDX-License-Identifier: MIT */
#include "launch-counts.h"

#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int launch_counts_create(void) {
        int fd = memfd_create("headstart-counts", MFD_CLOEXEC);
        if (fd >= 0 && ftruncate(fd, sizeof(struct launch_counts)) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

struct launch_counts *launch_counts_map(int fd) {
        void *p = MAP_FAILED;
        if (fd >= 0)
                p = mmap(NULL, sizeof(struct launch_counts), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
                p = mmap(NULL, sizeof(struct launch_counts), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
}

void launch_counts_unmap(struct launch_counts *c) {
        if (c)
                (void) munmap(c, sizeof *c);
}

void launch_counts_launched(struct launch_counts *c, enum launch_source source) {
        __atomic_add_fetch(&c->launches, 1, __ATOMIC_RELAXED);
        if (source == LAUNCH_POOLED)
                __atomic_add_fetch(&c->launches_pooled, 1, __ATOMIC_RELAXED);
        else if (source == LAUNCH_PREPARED)
                __atomic_add_fetch(&c->launches_prepared, 1, __ATOMIC_RELAXED);
}

void launch_counts_declined(struct launch_counts *c, enum hs_decline_reason code, const char *text) {
        __atomic_add_fetch(&c->declines, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&c->declined[code], 1, __ATOMIC_RELAXED);
        /* Two zygotes writing at once could mix two texts; the last byte stays NUL either way. */
        char *last = c->last_decline[code];
        snprintf(last, sizeof c->last_decline[code], "%s", text);
}
