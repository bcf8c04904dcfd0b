/* SPDX-License-Identifier: MIT */
/* The symbolic relocations of an object loaded in this process, read from its dynamic section in
 * memory: which slot the loader filled with the address of which symbol. */
#pragma once

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

struct loaded_reloc {
        uintptr_t *slot;     /* the word the loader wrote */
        int64_t addend;
        uint32_t type;
        const char *name;    /* the symbol it refers to */
        const char *version; /* the version the reference asks for, NULL for none */
        bool hidden_version; /* the reference asks for a non-default version */
};

/* Whether the loader filled r's word with its symbol's address (plus the addend): a word that can be
 * pointed elsewhere as the loader would (not a copy, a thread-local offset...). */
bool loaded_reloc_is_address(const struct loaded_reloc *r);

/* Calls fn for each relocation of the object that refers to a symbol by name (not the relative
 * ones, which the loader fills without a lookup). Stops at, and returns, fn's first non-zero
 * result. */
typedef int (*loaded_reloc_fn)(const struct loaded_reloc *r, void *userdata);
int loaded_relocs_walk(const struct link_map *object, loaded_reloc_fn fn, void *userdata);

/* The pages of the object's PT_GNU_RELRO range, which the loader made read-only after relocating
 * it; an empty range when it has none. */
void loaded_relro_range(const struct link_map *object, uintptr_t *ret_start, uintptr_t *ret_end);

/* Writes value into the word at slot of an object whose RELRO range is [relro_start, relro_end):
 * a word there is made writable for the write and read-only again. Returns 0 or a negative errno. */
int loaded_slot_write(uintptr_t *slot, uintptr_t value, uintptr_t relro_start, uintptr_t relro_end);

/* Whether the object names the library soname among those it needs (DT_NEEDED). */
bool loaded_needs(const struct link_map *object, const char *soname);
