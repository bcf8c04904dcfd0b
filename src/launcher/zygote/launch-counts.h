/* SPDX-License-Identifier: MIT */
/* The daemon's launch counts for --status, shared by every zygote it starts: a memfd that the
 * supervisor creates and hands on, and that each zygote maps. Counted per zygote, they restarted
 * at each refresh (after learning, 6 served launches showed 0). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "protocol.h"

struct launch_counts {
        uint64_t launches, launches_pooled, launches_prepared, declines;
        uint64_t declined[HS_DECLINE_COUNT];
        char last_decline[HS_DECLINE_COUNT][160]; /* the last text of each reason, NUL-terminated */
};

/* The supervisor's memfd, sized for the counts (close-on-exec); -1 when it cannot be made. */
int launch_counts_create(void);
/* The counts in fd mapped shared, or (fd -1, or mapping fails) a private zeroed copy; NULL only
 * when out of memory. */
struct launch_counts *launch_counts_map(int fd);
void launch_counts_unmap(struct launch_counts *c);

enum launch_source { LAUNCH_FORKED, LAUNCH_POOLED, LAUNCH_PREPARED };

/* Zygotes side by side count at once: each count is one atomic add. */
void launch_counts_launched(struct launch_counts *c, enum launch_source source);
void launch_counts_declined(struct launch_counts *c, enum hs_decline_reason code, const char *text);
