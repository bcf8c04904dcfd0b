/* SPDX-License-Identifier: MIT */
/* Libraries that define symbols of the C library again: gnulib's obstack in gettext's and binutils'
 * libraries, gnulib's argp in man-db's libman, libunwind's backtrace, an allocator of their own.
 * Under exec such a library comes before the C library in the lookup order, so the program and all
 * its libraries bind those names to it; a served program's lookups find the daemon's C library
 * first. The binding plan (bind-plan.h) points every reference at the library, as exec would, for
 * the families known to allow it, and sends the rest to exec. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "elf-info.h"
#include "string-list.h"

struct interposed {
        char name[56];
        uint64_t address;     /* of the library's definition, as loaded in the daemon */
        bool program_defines; /* the program defines it too: under exec, everyone binds there */
};

struct interposed_list {
        struct interposed *items;
        uint32_t n;
};

/* Finds the symbols of the C library that the libraries in closure (the loader's order, handles[i]
 * loaded for closure->items[i]) ahead of the C library define again, the first definition of each.
 * Returns NULL with *ret set, or why the program cannot be bound as exec would: a family not known
 * to be safe to bind elsewhere in a process the daemon's C library has already run in. */
const char *interposers_find(const struct elf_exports *program, const struct string_list *closure,
                             void *const *handles, struct interposed_list *ret, char *buf, size_t size);

const struct interposed *interposers_lookup(const struct interposed_list *list, const char *name);
void interposed_list_done(struct interposed_list *list);
