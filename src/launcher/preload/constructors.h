/* SPDX-License-Identifier: MIT */
/* A program's own constructors, run as exec's loader runs them.
 *
 * glibc's dlopen calls an object's DT_INIT and DT_INIT_ARRAY functions with the process's own argc
 * and argv: in the daemon's children, the daemon's (Rust's standard library, for one, reads a
 * program's arguments there). The daemon's loadable copy of a program hides them from dlopen
 * (image-cache.c), and each launch calls them itself once the program is bound (bind-plan.h), with
 * the program's arguments, as exec's loader would just before main. */
#pragma once

#include <stdint.h>

struct program_constructors {
        uint64_t init;  /* DT_INIT, from the load address; 0: none */
        uint64_t array; /* DT_INIT_ARRAY, from the load address */
        uint64_t count; /* its entries (DT_INIT_ARRAYSZ / 8); 0: none */
};

/* DT_INIT, then each DT_INIT_ARRAY entry in order (already relocated by the loader), as glibc's
 * call_init does. */
void program_constructors_run(const struct program_constructors *c, uintptr_t base, int argc, char **argv,
                              char **envp);
