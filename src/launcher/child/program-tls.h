/* SPDX-License-Identifier: MIT */
/* A served executable's own thread-local block (PT_TLS), put where exec's loader would put it: in
 * the daemon's reserve (tls-reserve.h), before the program is loaded, since loading it runs its
 * constructors, which may use it. */
#pragma once

#include <link.h>
#include <stdint.h>

/* What the child needs of the program's PT_TLS; block_offset 0: it has none. */
struct program_tls {
        uint64_t offset;       /* p_offset: its initial image (.tdata) in the file */
        uint64_t filesz;       /* p_filesz: the image's size; zeros follow it up to memsz */
        uint64_t block_offset; /* where exec puts the block, below the thread pointer */
        uint64_t vaddr, memsz, align; /* the rest of its PT_TLS */
        uint64_t others_refer; /* code other than its own local-exec code finds the block through the
                                * loader (tls_others_refer): the loader must know where it is */
};

/* Writes the program's initial values, read from the image file open at image_fd, into the calling
 * thread's block and into the image every later thread's block is copied from. Returns 0 or a
 * negative errno. */
int program_tls_install(const struct program_tls *tls, int image_fd);

/* Right after the program is loaded: tells the dynamic loader that the program's TLS module is the
 * block in the reserve (tls-reserve.h, tls_reserve_adopt), so that every lookup of its variables
 * through the loader (__tls_get_addr, TP-relative relocations of objects loaded later) finds them
 * there too, as under exec. Returns 0 or a negative errno (-EBUSY: the block was used through the
 * loader while the program loaded). */
int program_tls_adopt(const struct program_tls *tls, struct link_map *program);
