/* SPDX-License-Identifier: MIT */
/* Adaptive preload: the shared objects each registered program loaded after main in its served
 * launches (after-main.h says how they are seen), kept in a small state file so that every zygote
 * from the next one on preloads them, as Android's zygote preloads what apps use after their entry.
 *
 * The state file is text: a header line, then "program PATH" followed by its "object PATH" lines,
 * then "end". A file that is not ours (another owner), malformed or truncated is ignored with one
 * log line; an object that no longer exists is pruned. Saving merges with what is on disk (an old
 * and a new zygote may both learn) and renames a complete file into place.
 *
 * The same text is kept in memory too, in a memfd the supervisor holds and hands to every zygote:
 * when the file cannot be written (a full disk), what was learned still reaches the next zygote,
 * which would otherwise learn it again and ask for yet another zygote, launch after launch. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "string-list.h"

struct learned_object {
        char *path;
        char *skipped;  /* why this zygote does not preload it (its test load failed...); NULL otherwise */
        bool preloaded; /* loaded into this zygote */
};

struct learned_program {
        char *path; /* the registered program, as resolved at registration */
        struct learned_object *objects;
        size_t n;
};

struct file_id {
        dev_t dev;
        ino_t ino;
};

struct learned {
        char *file; /* the state file */
        int memory_fd; /* the supervisor's memfd with the same text, or -1 */
        struct learned_program *programs;
        size_t nprograms;
        struct file_id *known; /* files this zygote maps itself, or judged not worth learning */
        size_t nknown;
        unsigned learned_now; /* objects this zygote learned; the next zygote preloads them */
};

/* Reads the state file (missing is fine) and what memory_fd holds (-1: nothing). Returns 0, or
 * -ENOMEM; every other problem is logged once and leaves nothing learned, or the bad entries out. */
int learned_load(struct learned *l, const char *file, int memory_fd);
void learned_done(struct learned *l);

/* The objects learned for the registered programs, not yet loaded, in the order they were first
 * loaded; each entry points at l's object (which preloading marks preloaded or skipped). */
size_t learned_to_preload(struct learned *l, const struct string_list *programs, struct learned_object ***ret);
/* The paths of the learned objects this zygote has loaded (for binding them to a program as exec would). */
int learned_preloaded_paths(const struct learned *l, struct string_list *ret);
/* Adds to ret those of them learned for the registered program at path (none for another). */
int learned_preloaded_paths_of(const struct learned *l, const char *program, struct string_list *ret);

/* Records what this zygote maps itself, once everything is loaded: those are never "learned". */
int learned_snapshot_self(struct learned *l);
/* Never learns this file (a registered program: loading it runs the program's code). */
int learned_ignore(struct learned *l, dev_t dev, ino_t ino);

/* A child of `program`, launched at `launched` (the wall clock's seconds), had `path` loaded after
 * main. Returns 1 when that is new (the file must then be saved), 0 when it is known, not a shared
 * object worth preloading, or changed since the launch began (judged again when seen next), <0 on
 * error. `id` may be NULL (it is then looked up). */
int learned_note(struct learned *l, const char *program, const char *path, const struct file_id *id, time_t launched,
                 const char *cache_dir);
/* Writes the state file and the memory copy, each merged with what it holds now. Returns 0, or the
 * error of writing the file (the memory copy is written whatever happens to the file). */
int learned_save(const struct learned *l);
