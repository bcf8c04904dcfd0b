/* SPDX-License-Identifier: MIT */
/* A served executable's own thread-local block (PT_TLS), put where exec's loader would put it: in
 * the daemon's reserve (tls-reserve.h), before the program is loaded, since loading it runs its
 * constructors, which may use it. */
#pragma once

#include <stdint.h>

/* What the child needs of the program's PT_TLS; block_offset 0: it has none. */
struct program_tls {
        uint64_t offset;       /* p_offset: its initial image (.tdata) in the file */
        uint64_t filesz;       /* p_filesz: the image's size; zeros follow it up to memsz */
        uint64_t block_offset; /* where exec puts the block, below the thread pointer */
};

/* Writes the program's initial values, read from the image file open at image_fd, into the calling
 * thread's block and into the image every later thread's block is copied from. Returns 0 or a
 * negative errno. */
int program_tls_install(const struct program_tls *tls, int image_fd);
