/* SPDX-License-Identifier: MIT */
/* The environment variables the daemon's libraries read as the zygote loaded them: in their
 * constructors (libgomp's OMP_NUM_THREADS, OpenSSL's OPENSSL_ia32cap, GLib's G_DEBUG), in a warm
 * program's, in a warm-up step. They read the daemon's values once, and a served program keeps
 * what those said; a launch whose environment differs in one is exec'd (a new user's trial,
 * 2026-12-02: OMP_NUM_THREADS=1 gave an OpenMP program two threads served).
 *
 * Seen through getenv and secure_getenv (the daemon's own, ahead of the C library's:
 * src/entry/env-reads.h); a library that scans environ itself, or the C library's own reads
 * (setlocale's LANG, the loader's LD_*: loader-env.h), are not seen here. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define READ_AT_LOAD_MAX 256
#define READ_AT_LOAD_NAME_MAX 64

struct read_at_load {
        char name[READ_AT_LOAD_NAME_MAX];
        char reader[READ_AT_LOAD_NAME_MAX]; /* the file name of the first library that read it */
        char *value;                        /* the daemon's, or NULL when it has none */
};

struct read_at_load_list {
        struct read_at_load items[READ_AT_LOAD_MAX];
        size_t n;
        bool overflowed; /* more names were read than it holds: every launch goes to exec */
};

/* Notes from now on each variable a library reads, until read_at_load_stop. */
void read_at_load_start(void);

/* Stops noting, and fills list with the names read and the values of envp (the daemon's).
 * Returns 0 or -ENOMEM. */
int read_at_load_stop(char *const *envp, struct read_at_load_list *list);
void read_at_load_done(struct read_at_load_list *list);

/* NULL when envp has each variable as the daemon had it (or both lack it), otherwise why not, in
 * buf. */
const char *read_at_load_refusal(const struct read_at_load_list *list, char *const *envp, char *buf, size_t size);
