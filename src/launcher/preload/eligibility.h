/* SPDX-License-Identifier: MIT */
/* The rules that decide whether the daemon can run a program exactly as exec would.
 * docs/limitations.md explains each; `headstartd --check` prints the verdict. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "elf-info.h"

struct program_facts {
        struct stat st;
        struct elf_info elf;
        bool has_capabilities; /* security.capability extended attribute */
        bool registered;       /* its library closure was preloaded from --app */
};

/* Fills facts from a readable fd of the program. Returns 0 or a negative errno. */
int program_facts_read(int fd, bool registered, struct program_facts *ret);

/* Whether the program is started through its ELF entry point (_start), as an executable; otherwise
 * it is a shared object whose exported main is called. */
bool eligibility_has_entry(const struct elf_info *e);

/* Returns NULL when the daemon can serve the program, otherwise why not, in plain words.
 * `interp` is the daemon's own dynamic loader. The text may point into `buf`. */
const char *eligibility_verdict(const struct program_facts *f, const char *interp, char *buf, size_t size);

/* A program built with AddressSanitizer (or TSan, LSan, HWASan) needs its sanitizer's runtime first
 * in its process; loaded into the daemon, the runtime ends it. */
#define ELIGIBILITY_SANITIZER "built with a sanitizer whose runtime must be the first object of its process: exec runs it"
