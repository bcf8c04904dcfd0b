/* SPDX-License-Identifier: MIT */
/* The pin plan: which byte ranges of which files launches need, and how much each is worth.
 * `headstart pin plan` writes it from cold-launch profiles; headstartd-pind reads it. Text, one
 * record a line, so that a device needs no Python:
 *
 *   headstart-pin-plan 1
 *   file SIZE PATH          the file as profiled (SIZE in bytes; a file of another size is skipped)
 *   range OFFSET LENGTH W   bytes of the file above, worth W (launches that touched them)
 *   end
 *
 * docs/pinning.md describes it. A malformed line is reported and skipped; the rest is used. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define PIN_PLAN_HEADER "headstart-pin-plan 1"

struct pin_range {
        uint64_t offset, length, weight;
};

struct pin_file {
        char *path;
        uint64_t size;
        struct pin_range *ranges;
        size_t nranges;
};

struct pin_plan {
        struct pin_file *files;
        size_t nfiles;
};

/* Reads the plan at path. Returns 0 (bad lines logged and skipped), or a negative errno when the
 * file cannot be read or is not a plan (logged). */
int pin_plan_read(const char *path, struct pin_plan *ret);
void pin_plan_done(struct pin_plan *plan);
