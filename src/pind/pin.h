/* SPDX-License-Identifier: MIT */
/* Keeping the chosen ranges resident: each file of the plan is mapped read-only and shared, and the
 * ranges ranked highest are mlock()ed until the budget (or RLIMIT_MEMLOCK) is used. A locked page of
 * a shared file mapping stays in the page cache whatever drops caches, so every process that maps or
 * reads the file finds it there. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "plan.h"
#include "score.h"

struct pinned_file {
        const struct pin_file *plan; /* its ranges */
        dev_t dev;
        ino_t ino;
        struct timespec mtime;
        off_t size;
        void *map; /* NULL: not pinned (missing, of another size, changed in place, no range) */
        int held_fd; /* a file with no range, held open (its inode and path stay cached), or -1 */
        size_t map_len;
        bool *locked; /* per range of the plan */
        uint64_t locked_bytes;
};

struct file_identity {
        dev_t dev;
        ino_t ino;
};

struct pinner {
        struct pinned_file *files; /* one per file of the plan, in its order */
        size_t nfiles;
        /* Files changed in place since they were pinned: their planned ranges may now hold other
         * data, so they stay unpinned until replaced (a new inode) or a new plan comes. */
        struct file_identity *dropped;
        size_t ndropped;
        uint64_t budget; /* bytes */
        uint64_t locked;
        uint64_t wanted; /* what the ranking asks for within the budget, for the RLIMIT_MEMLOCK message */
        bool limit_told;
        time_t repinned_at; /* wall clock of the last change, for the status */
        bool (*interrupted)(void); /* asked between files mapped and ranges locked; NULL: never */
};

/* Maps the plan's files (nothing locked yet). Files that are missing or of another size than
 * planned are reported and skipped. interrupted (or NULL) is asked between files, and between
 * ranges locked later: when it says yes, mapping stops with -EINTR and locking stops where it is.
 * Returns 0, -EINTR or -ENOMEM. */
int pinner_map(struct pinner *p, const struct pin_plan *plan, uint64_t budget, bool (*interrupted)(void));
/* Locks the ranges ranked highest that fit the budget and unlocks those that no longer do (each
 * range of the plan is its own pages: plan.h). Returns whether anything changed. */
bool pinner_repin(struct pinner *p, const struct ranked *ranked, size_t n);
/* Unlocks and unmaps everything (what was dropped is kept when keep_dropped). */
void pinner_release(struct pinner *p, bool keep_dropped);
/* Whether a pinned file was replaced (another inode now has its name: an upgrade) or changed in
 * place since it was pinned (then remembered as dropped); the caller then maps the plan again. */
bool pinner_stale(struct pinner *p);
/* The status: the budget used and the last re-pin; with `each`, also the bytes pinned per file and
 * per program (hundreds of lines on a device, where a plan is loaded at every boot: on request). */
void pinner_log_status(const struct pinner *p, const struct pin_plan *plan, const struct launch_counts *c,
                       bool each);
