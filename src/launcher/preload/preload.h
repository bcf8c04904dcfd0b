/* SPDX-License-Identifier: MIT */
/* Loading the registered programs' libraries into the daemon, once, with every relocation done. */
#pragma once

#include <limits.h>
#include <stddef.h>

#include "options.h"

/* Appends to libs the library closure of `program` as the system loader resolves it when it execs
 * the program: we ask that loader itself (`ld.so --list`, which maps the libraries but runs none of
 * their code), so search paths, RUNPATH, $ORIGIN, hwcaps and the cache all count exactly as for exec.
 * -ENOEXEC, unlogged, when the loader cannot list them (not a dynamically linked program).
 * Unless missing is NULL, the loader also traces its search (LD_DEBUG=libs), and the names it looked
 * for a library at and found no file at (a RUNPATH or LD_LIBRARY_PATH directory before the one that
 * has it) are added to missing: a library put there later is what exec would load instead.
 * A loader still listing after timeout_ms is killed (-ETIMEDOUT): a library it opens can block it
 * for ever (a FIFO at its name), and the zygote with it. */
int preload_resolve_closure(const char *interp, const char *program, struct string_list *libs,
                            struct string_list *missing, unsigned timeout_ms);

/* How long a zygote waits for the loader's list of an unregistered program's libraries as it judges
 * its launch: every other launch waits meanwhile, and a client its deadline (2 s by default). */
#define PRELOAD_LIST_LAUNCH_TIMEOUT_MS 1000u

/* dlopen()s each library with RTLD_NOW, skipping ones already loaded; one whose own dependencies
 * the loader finds only among loaded objects after the others. Fails, saying why in why and the
 * library's index in *ret_failed, if a library cannot be loaded (-ENOENT) or loading started a
 * thread (-EDEADLK: the daemon forks, and a forked copy of a multi-threaded process is not safe to
 * run, so this process must not serve any more). */
int preload_load(const struct string_list *libs, size_t *ret_loaded, size_t *ret_failed, char *why, size_t size);


/* The path of a library given by name (--preload libz.so.1) as the dynamic loader finds it, tried
 * in a throwaway child; a path is taken as it is. Returns 0, or -ENOENT when the loader cannot load
 * it, with its reason in buf (empty when it gave none). */
int preload_find_library(const char *name, char *buf, size_t size);

/* Finds a program given by name on PATH as execvp(3) would, so --app ls means what `ls` means.
 * buf must hold PATH_MAX bytes (realpath's contract). */
int preload_find_program(const char *name, char buf[static PATH_MAX]);

/* The threads of this process (the daemon must stay single-threaded: it forks). */
int preload_count_threads(void);

/* Why the file at path cannot be a program to register or judge (a directory, not executable...),
 * in words for a user; NULL when it may be one. */
const char *preload_program_problem(const char *path);

/* Why the program at path must not have its libraries loaded here, as registering or judging it
 * would (its sanitizer's runtime ends a process it is loaded into once started); NULL when it may. */
const char *preload_program_refusal(const char *path);

/* Reads the PT_INTERP of our own executable. */
int preload_own_interp(char *buf, size_t size);
