/* SPDX-License-Identifier: MIT */
/* Keeping the planned ranges resident: each file of the plan is mapped read-only and shared, and
 * its ranges are mlock()ed, most valuable first, until the budget (or RLIMIT_MEMLOCK) is used. A
 * locked page of a shared file mapping stays in the page cache whatever drops caches, so every
 * process that maps or reads the file finds it there. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "plan.h"

struct pinned_file {
        const struct pin_file *plan; /* its ranges */
        dev_t dev;
        ino_t ino;
        struct timespec mtime;
        off_t size;
        void *map;
        size_t map_len;
        uint64_t locked; /* bytes */
};

struct file_identity {
        dev_t dev;
        ino_t ino;
};

struct pinner {
        struct pinned_file *files;
        size_t nfiles;
        /* Files changed in place since they were pinned: their planned ranges may now hold other
         * data, so they stay unpinned until replaced (a new inode) or a new plan comes. */
        struct file_identity *dropped;
        size_t ndropped;
        uint64_t budget; /* bytes */
        uint64_t locked;
        uint64_t wanted; /* what the plan asks for within the budget, for the RLIMIT_MEMLOCK message */
};

/* Maps the plan's files and locks their ranges within budget bytes. Files that are missing or of
 * another size than planned are reported and skipped. Returns 0 or -ENOMEM. */
int pinner_apply(struct pinner *p, const struct pin_plan *plan, uint64_t budget);
/* Unlocks and unmaps everything (what was dropped is kept when keep_dropped). */
void pinner_release(struct pinner *p, bool keep_dropped);
/* Whether a pinned file was replaced (another inode now has its name: an upgrade) or changed in
 * place since it was pinned (then remembered as dropped); the caller then applies the plan again. */
bool pinner_stale(struct pinner *p);
/* One log line per file and a total. */
void pinner_log_status(const struct pinner *p);
