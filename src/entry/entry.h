/* SPDX-License-Identifier: MIT */
/* libheadstart-entry.so: starts an unmodified executable that the daemon has loaded like a library.
 *
 * The daemon links this library ahead of the C library, so every __libc_start_main in the process
 * resolves here. Outside a capture it hands over to the C library's own, unchanged: that is how
 * the daemon itself starts. During a capture, the program's _start runs on a stack laid out as the
 * kernel lays it out for exec, hands its main to us, and we return that main to the caller, which
 * then runs it on the normal stack. */
#pragma once

#include <link.h>
#include <stddef.h>
#include <stdint.h>

typedef int (*hs_main_fn)(int argc, char **argv, char **envp);

/* What the auxiliary vector says about the program the process runs. */
struct hs_program_image {
        uintptr_t entry;        /* address of _start */
        const ElfW(Phdr) *phdr; /* its program headers, in memory */
        size_t phnum;
        const char *execfn;     /* the path it was started by */
};

/* Rewrites the process's auxiliary vector (what getauxval() reads) so that it describes this
 * program, as exec would have: AT_ENTRY, AT_PHDR, AT_PHNUM, AT_EXECFN, and new AT_RANDOM bytes.
 * Returns 0, or -ENOENT when the vector was not found (the process did not start through us). */
int hs_entry_adopt_auxv(const struct hs_program_image *image);

/* Enters the program at image->entry with argc, argv, envp and the process's auxiliary vector on
 * a fresh initial stack, and returns the main its _start passes to __libc_start_main. Returns NULL
 * when no auxiliary vector is known. */
hs_main_fn hs_entry_find_main(const struct hs_program_image *image, int argc, char **argv, char **envp);
