/* SPDX-License-Identifier: MIT */
/* The ELF reader's own view of a file, shared by elf-info.c and elf-tls.c: bounds-checked access to
 * a file read into memory. Not for use outside src/common. */
#pragma once

#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "elf-info.h"

struct image {
        const uint8_t *data;
        size_t size;
        const Elf64_Ehdr *ehdr;
        const Elf64_Phdr *phdr;
};

/* len bytes at file offset off, aligned for the type read there (the buffer itself is): a crafted
 * file may put a table at any offset, and reading a misaligned one is undefined behaviour. */
static inline const void *elf_at(const struct image *im, uint64_t off, uint64_t len, size_t align) {
        if (off > im->size || len > im->size - off || off % align != 0)
                return NULL;
        return im->data + off;
}

/* The sections that describe the dynamic symbols: found by type, each checked against the file. */
struct symbol_tables {
        const Elf64_Sym *sym;
        size_t nsym;
        const char *str;
        size_t strsz;
        const uint16_t *versym;         /* NULL: no versions */
        const uint8_t *verneed, *verdef; /* section contents */
        size_t verneed_size, verdef_size;
        uint64_t sym_addr; /* the dynamic symbol table's address in memory, from the load address */
};

int elf_vaddr_to_offset(const struct image *im, uint64_t vaddr, uint64_t len, uint64_t *ret);
int elf_find_symbol_tables(const struct image *im, struct symbol_tables *t);

/* What refers to the executable's own PT_TLS block, and whether it needs another object's block in
 * static TLS (elf-tls.c): sets info's tls_* verdicts. */
void elf_tls_read_users(const struct image *im, const Elf64_Phdr *dynp, struct elf_info *info);
