/* SPDX-License-Identifier: MIT */
/* --prefetch: the plan's ranges read into the page cache, ranked as for pinning and within the same
 * budget, at idle I/O priority and without locking anything: for boot (launches that come next find
 * their pages cached) and where locking memory is not allowed. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "score.h"

/* Returns 0, or a negative errno when nothing could be read (logged). */
int prefetch(const struct pin_plan *plan, const struct ranked *ranked, size_t n, uint64_t budget);
