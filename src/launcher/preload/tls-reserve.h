/* SPDX-License-Identifier: MIT */
/* The daemon's reserve of static thread-local storage, where a served executable's own TLS block
 * (PT_TLS) goes.
 *
 * An executable reaches its own thread-local variables by local-exec code: the static linker baked
 * in their offsets from the thread pointer, for the place exec's loader gives the first module, the
 * executable, right below the thread pointer (x86-64 is TLS variant II: glibc 2.36's
 * _dl_determine_tlsoffset puts it at TP - roundup(memsz - firstbyte, align) - firstbyte). A dlopened
 * program gets a dynamic module instead, and its local-exec code would land in whatever static TLS
 * the daemon has there. So headstartd's own executable has a thread-local block, module 1, of
 * TLS_RESERVE_SIZE bytes that nothing of the daemon uses: a program whose block fits in it, aligned
 * no more, finds its variables there in every thread once the launched child has written the
 * program's initial values into it and into its initial image, which glibc copies into the block of
 * every thread created later (_dl_allocate_tls_init). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "elf-info.h"

#define TLS_RESERVE_SIZE 2048
#define TLS_RESERVE_ALIGN 64

/* Why no program's block can go in the reserve in this process (checked once, at first call: the
 * reserve must be module 1, right below the thread pointer, with an initial image to rewrite), or
 * NULL when it can. */
const char *tls_reserve_problem(void);

/* Where exec's loader puts the executable's block, below the thread pointer; 0 when it has none
 * (an empty PT_TLS) or it cannot be computed (a malformed one). */
uint64_t tls_block_offset(const struct elf_info *e);

/* NULL when the executable's block (e->has_tls) can go in the reserve exactly where exec would put
 * it, else why not (may point into buf). */
const char *tls_reserve_verdict(const struct elf_info *e, char *buf, size_t size);

/* In the launched child, before the program is loaded: makes `image` (TLS_RESERVE_SIZE bytes) the
 * content of the calling thread's reserve and of every thread's created later. Returns 0 or a
 * negative errno. */
int tls_reserve_fill(const unsigned char *image);
