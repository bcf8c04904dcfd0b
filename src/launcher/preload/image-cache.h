/* SPDX-License-Identifier: MIT */
/* What the daemon knows about each program file it was asked to run: whether it can serve it, and
 * which file to dlopen. glibc's dlopen refuses an object whose DT_FLAGS_1 carries DF_1_PIE
 * ("cannot dlopen() a PIE", since 2.30), so for a PIE we dlopen a copy with the flag cleared.
 * Entries are keyed by device, inode, size, mtime and ctime: a changed file is a new entry. */
#pragma once

#include <stdbool.h>
#include <sys/stat.h>

#include "elf-info.h"
#include "file-identity.h"
#include "run-program.h"
#include "string-list.h"

#define IMAGE_CACHE_SIZE 256

struct image_entry {
        struct file_identity id;
        int fd;       /* the file to load, open: exactly the file that was checked (the client's
                       * program, or our copy of it); -1 when not served */
        char *copy;   /* our copy's name in the cache directory, or NULL */
        char *path;   /* the path it was asked for by, or NULL */
        char *reason; /* why not served; NULL when served */
        bool warm;    /* the image is loaded in the daemon: children only call main */
        bool own_fini; /* elf-info.h: a warm program's DT_FINI would run at every child's exit */
        struct image_start start;
        struct bind_plan plan;
};

struct learned;

struct image_cache {
        char *dir;   /* this process's copies: DIR/PID */
        int dir_fd;  /* the same directory, open: copies are made through it, never through a path */
        const char *interp; /* the daemon's own dynamic loader */
        const struct string_list *also_loaded; /* objects preloaded beyond the closures (learned after
                                                * main): bound to a program as exec binds them; or NULL */
        const struct learned *learned; /* which of them each program loaded itself; or NULL */
        struct image_entry entries[IMAGE_CACHE_SIZE];
        unsigned next; /* round-robin eviction */
};

/* Creates dir (0700) if needed, or checks that an existing one is ours, private and not a symlink;
 * removes what daemons that are gone left there, and keeps this process's copies in dir/PID (an old
 * zygote and a new one run side by side). On -EPERM, *ret_why says what is wrong with dir. */
int image_cache_init(struct image_cache *c, const char *dir, const char *interp, const char **ret_why);
/* Finds again, for each entry whose binding moves a library variable, the pointers into it
 * (bind_plan_rescan): once the warm programs are loaded, whose constructors may have built it.
 * An entry whose pointers cannot be found gets a reason (exec). Returns how many did. */
int image_cache_rescan(struct image_cache *c);
/* Forgets every entry and removes this process's copies. */
void image_cache_done(struct image_cache *c);

/* Finds or builds the entry for the program open at fd (readable, with fstat result st), known to
 * clients as path. closure: its libraries as the dynamic loader resolved them just before, when the
 * caller has them (the zygote's start); NULL has the loader asked again, which under emulation or on
 * a slow board costs as much as loading the program. Returns 0 with *ret set, or a negative errno (the
 * file could not be read or copied). */
int image_cache_get(struct image_cache *c, int fd, const struct stat *st, const char *path, bool registered,
                    const struct string_list *closure, struct image_entry **ret);

/* Why a served entry cannot be warm (loaded in the daemon), or NULL. */
const char *image_entry_warm_refusal(const struct image_entry *e);

/* The name under which this process loads a served entry's file ("/proc/PID/fd/N"): the checked file
 * itself, whatever its path now names. The pid keeps it apart from the names a forked child, whose
 * fd numbers differ, loads its program under. */
void image_entry_load_name(const struct image_entry *e, char *buf, size_t size);

/* A loadable copy in memory of the PIE program open on fd (size bytes, elf its facts), for a
 * throwaway child that only tries whether it loads: the fd, or a negative errno. */
int image_loadable_memfd(int fd, off_t size, const struct elf_info *elf);
