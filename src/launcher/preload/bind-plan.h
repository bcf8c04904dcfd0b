/* SPDX-License-Identifier: MIT */
/* Binding a program's libraries to the program, as exec would have.
 *
 * Under exec the executable comes first in the symbol lookup order: every reference a library makes
 * to a symbol the executable defines binds there, and a variable the executable copies (a copy
 * relocation: stdout, optind, environ...) is used by everyone in that copy. A program that the
 * daemon dlopens after its libraries finds them bound to their own definitions, so getopt would
 * update an optind that the program never reads. The daemon plans once per program which slots of
 * the libraries to point at the program and which copies to fill; each launch applies the plan
 * right after loading the program.
 *
 * A library ahead of the C library that defines some of its symbols again (interposers.h) comes
 * first in exec's lookup order too: the plan points the program's and the libraries' references to
 * those names at it, as exec would. */
#pragma once

#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include "elf-info.h"
#include "interposers.h"
#include "string-list.h"

struct bind_copy {
        uint64_t offset; /* of the program's copy, from its load address */
        uint64_t source; /* address of the variable the libraries use now */
        uint64_t size;
        uint64_t moved;  /* 1: pointers into it move to the copy with it (see pointer-scan.h) */
        uint64_t data_start, data_end; /* moved: its library's writable data, scanned at each launch */
        uint64_t sym_addr; /* its Elf64_Sym in the program, from its load address; 0: none to restore */
        uint64_t shndx;    /* the st_shndx to restore there (image-cache.c undefines it in the copy) */
};

/* A word outside the copies that pointed into the source of copies[copy] when the plan was made. */
struct bind_fixup {
        uint64_t address;
        uint64_t copy;
};

struct bind_slot {
        uint64_t slot;     /* address of the library's word */
        uint64_t value;    /* the value it gets, from the program's load address unless absolute */
        uint64_t relro;    /* the word is in a range the loader made read-only */
        uint64_t absolute; /* 1: value is an address in a library the daemon loaded (an interposer) */
        /* 1: value is a weak function of the program, and without the program the word reached a
         * function of the same name: two copies of one C++ inline function or template instance,
         * the same code by the One Definition Rule (binds_alike_only in prepare-judge.c); or the
         * same for a class's type information, constant and compared by its name. */
        uint64_t same_code;
};

struct bind_plan {
        uint32_t ncopies, nslots, nfixups, nrebinds;
        struct bind_copy *copies;
        struct bind_slot *slots; /* sorted by address */
        struct bind_fixup *fixups;
        struct interposed *rebinds; /* the program's own references to these go to the library */
};

/* Plans the binding of a program that defines the symbols ex and needs the libraries closure (in
 * the loader's order), all of which must be loaded in this process. Returns NULL with *plan set, or
 * why the program cannot be bound as exec would bind it (written to buf when it needs details). */
const char *bind_plan_build(const struct elf_exports *ex, const struct string_list *closure, struct bind_plan *plan,
                            char *buf, size_t size);
void bind_plan_done(struct bind_plan *plan);

/* Finds again the pointers into the variables the plan moves (pointer-scan.h), once more code ran
 * in this process since the plan was made (the warm programs' constructors, which may build the
 * C++ streams). Returns NULL or why the plan cannot be kept. */
const char *bind_plan_rescan(struct bind_plan *plan);

/* In the launched child, with the program loaded. Returns 0 or a negative errno. */
int bind_plan_apply(const struct bind_plan *plan, const struct link_map *program);

/* The plan as bytes, for a pooled child that was forked before the plan was made. bind_plan_parse
 * points into buf, which must stay alive and be aligned for uint64_t. */
size_t bind_plan_size(const struct bind_plan *plan);
void bind_plan_write(const struct bind_plan *plan, void *buf);
int bind_plan_parse(const void *buf, size_t size, struct bind_plan *ret);
