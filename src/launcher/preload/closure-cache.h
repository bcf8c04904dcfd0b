/* SPDX-License-Identifier: MIT */
/* The registered programs' library closures as the loader resolved them at the zygote's last start,
 * kept beside the learned file, so that a start where nothing the loader reads has changed does not
 * ask it again (`ld.so --list`, once per program, a whole dynamic load: 1.5 s of a device's boot
 * under emulation for two GTK programs, against 0.4 s for preloading their libraries).
 *
 * An entry is used only if the loader would resolve the program the same way: the loader, its
 * cache (/etc/ld.so.cache) and /etc/ld.so.preload are the same files, the daemon's LD_* and
 * GLIBC_TUNABLES variables and the CPU's capabilities are the same, the program and every library
 * it resolved to are the same files (device, inode, size, modification and change times: a
 * rewrite, rename or retargeted symlink changes one), and every name the loader looked at and found
 * no file at (preload.h's missing) still has none. Otherwise the loader is asked, as without a
 * cache. What the entries name is checked as before, once taken (zygote.c's untrusted_file). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "string-list.h"

struct closure_entry {
        char *program, *id;
        struct string_list libs, lib_ids, missing;
};

struct closure_cache {
        char *key; /* what the loader's answers depend on beyond the files: see above */
        struct closure_entry *entries;
        size_t n;
        size_t taken, resolved; /* entries found valid, entries added by remember */
};

/* Reads the cache at path, if it is ours and made under the same key; an absent, foreign or
 * malformed one is an empty cache (a warning for the last two). interp: the loader. */
void closure_cache_load(struct closure_cache *c, const char *path, const char *interp);

/* The program's closure and missing names (appended to libs and missing) from the cache, if its
 * entry is still what the loader would answer. */
bool closure_cache_take(struct closure_cache *c, const char *program, const struct stat *st,
                        struct string_list *libs, struct string_list *missing);

/* Keeps the loader's answer for the program (replacing an entry of it), for closure_cache_save. */
void closure_cache_remember(struct closure_cache *c, const char *program, const struct stat *st,
                            const struct string_list *libs, const struct string_list *missing);

/* Writes the entries of these programs back when the loader was asked for any of them; entries of
 * programs no longer registered are dropped then. */
void closure_cache_save(const struct closure_cache *c, const char *path, const struct string_list *programs);

void closure_cache_done(struct closure_cache *c);
