/* SPDX-License-Identifier: MIT */
/* What tells one version of a file from another without reading it: the inode it is, its size and
 * its times. mtime alone misses a file replaced by one written in the same clock tick, or one whose
 * writer set mtime back (tar, cp -p); ctime cannot be set back by a program, and changes with the
 * file's mode and links too (a program made non-executable is another file to exec). */
#pragma once

#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>

struct file_identity {
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime, ctime;
};

static inline struct file_identity file_identity_of(const struct stat *st) {
        return (struct file_identity){ .dev = st->st_dev, .ino = st->st_ino, .size = st->st_size,
                                       .mtime = st->st_mtim, .ctime = st->st_ctim };
}

static inline bool file_identity_same_time(struct timespec a, struct timespec b) {
        return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static inline bool file_identity_same(const struct file_identity *a, const struct file_identity *b) {
        return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
               file_identity_same_time(a->mtime, b->mtime) && file_identity_same_time(a->ctime, b->ctime);
}

/* Whether st (a stat of the file now) is the version id was taken of. */
static inline bool file_identity_matches(const struct file_identity *id, const struct stat *st) {
        struct file_identity now = file_identity_of(st);
        return file_identity_same(id, &now);
}
