/* SPDX-License-Identifier: MIT */
/* The pin plan: which byte ranges of which files the launches of which programs need.
 * `headstart pin plan` writes it from cold-launch profiles; headstart-pind reads it. Text, one
 * record a line, so that a device needs no Python:
 *
 *   headstart-pin-plan 2
 *   program ID LAUNCHES PATH    a profiled program (IDs 0, 1, ... in order) and its launch count
 *   file SIZE PATH              a file as profiled (SIZE in bytes; a file of another size is skipped);
 *                               one with no range is only held open (its inode and path stay cached)
 *   range OFFSET LENGTH IDS     bytes of the file above that the programs IDS (1,4,7) needed
 *   end
 *
 * docs/pinning.md describes it. A malformed line is reported and skipped; the rest is used. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PIN_PLAN_HEADER "headstart-pin-plan 2"

struct pin_program {
        char *path;
        double launches; /* the count the plan starts from */
};

struct pin_range {
        uint64_t offset, length;
        uint32_t *programs; /* indexes into pin_plan.programs */
        size_t nprograms;
};

struct pin_file {
        char *path;
        uint64_t size;
        struct pin_range *ranges;
        size_t nranges;
};

struct pin_plan {
        struct pin_program *programs;
        size_t nprograms;
        struct pin_file *files;
        size_t nfiles;
};

/* Reads the plan from fd (taken: closed in any case), the file at path (for messages). The ranges
 * of each file come back as runs of whole pages that do not overlap, in file order, clipped to the
 * file's planned size, each naming every program a range covering it named, once: a page of the
 * plan is one page of the budget however many ranges list it. interrupted, unless NULL, is asked
 * every few thousand lines; when it says yes, reading stops with -EINTR (not logged). Returns 0
 * (bad lines logged and skipped), or a negative errno when the file cannot be read or is not a
 * plan (logged). */
int pin_plan_read_fd(int fd, const char *path, bool (*interrupted)(void), struct pin_plan *ret);
/* The same for the file at path, opened here, never interrupted. */
int pin_plan_read(const char *path, struct pin_plan *ret);
void pin_plan_done(struct pin_plan *plan);
