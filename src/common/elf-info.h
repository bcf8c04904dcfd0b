/* SPDX-License-Identifier: MIT */
/* Facts about one ELF file that decide whether and how the daemon can serve it. No logging. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct elf_info {
        bool is_elf;
        bool is_64bit;
        bool machine_matches;  /* built for the architecture we run on */
        bool is_dyn;           /* ET_DYN: PIE or shared object; ET_EXEC is a fixed-address program */
        bool has_dynamic;      /* PT_DYNAMIC present; absent means statically linked */
        bool has_interp;       /* PT_INTERP present */
        char interp[256];      /* its value */
        bool has_tls;          /* PT_TLS present: the executable's own thread-local block */
        uint64_t tls_vaddr, tls_offset, tls_filesz, tls_memsz, tls_align; /* its PT_TLS, when has_tls */
        bool tls_image_relocated; /* a dynamic relocation writes inside the block's initial image
                                   * (.tdata): its initial values hold addresses */
        bool tls_self_relocated;  /* a dynamic TLS relocation refers to the file's own block (a symbol
                                   * it defines, or symbol 0) */
        bool tls_exported;        /* it exports a thread-local variable (or its symbols cannot be read):
                                   * other objects' TLS relocations may refer to its block */
        bool tls_static_elsewhere; /* initial-exec code reaches another object's thread-local variable:
                                    * that object's block must be in static TLS when this file loads */
        bool has_preinit;      /* DT_PREINIT_ARRAY: only ld.so runs it, and only for the main program */
        bool has_rpath;        /* DT_RPATH (searched for the main program's whole closure) */
        bool origin_in_path;   /* $ORIGIN in DT_RPATH or DT_RUNPATH */
        bool has_soname;       /* DT_SONAME: the loader knows it loaded by that name */
        bool exports_main;     /* a defined, global `main` in the dynamic symbol table */
        size_t needed;         /* DT_NEEDED entries */
        bool needs_sanitizer_runtime; /* its first DT_NEEDED is a sanitizer's runtime that must come
                                       * first in its process (an ASan build) */
        uint64_t entry;        /* e_entry: where _start is, relative to the load address (0: none) */
        uint64_t phdr_vaddr;   /* where the program headers are mapped, relative to the load address */
        uint16_t phnum;
        bool reads_own_exe;    /* the file mentions /proc/self/exe: it looks at its own executable */
        bool pie_flag;         /* DF_1_PIE set in DT_FLAGS_1 */
        off_t flags_1_offset;  /* file offset of the DT_FLAGS_1 value, when pie_flag */
        uint64_t init;         /* DT_INIT, from the load address (0: none) */
        off_t init_tag_offset; /* file offset of the DT_INIT entry (its tag), when init */
        uint64_t init_array;   /* DT_INIT_ARRAY, from the load address */
        uint64_t init_arraysz; /* DT_INIT_ARRAYSZ, in bytes (0: none) */
        off_t init_arraysz_offset; /* file offset of the DT_INIT_ARRAYSZ value, when init_arraysz */
        bool own_fini;         /* DT_FINI names a function of the file's own (-Wl,-fini=), not the C
                                * runtime's empty _fini, which starts the small .fini section */
};

/* A file read into memory once, for several of the readers below (the *_of ones); elf_info_read
 * and elf_exports_read read the file open at fd for themselves. */
struct elf_file {
        const uint8_t *data; /* NULL for a file too short to be ELF */
        size_t size;
};

/* Reads the regular file open at fd into *ret: 0, or a negative errno with *ret untouched.
 * elf_file_done frees it, and does nothing to a zeroed one. */
int elf_file_read(int fd, struct elf_file *ret);
void elf_file_done(struct elf_file *f);

/* Reads the ELF file. Returns 0 (info filled, is_elf false for a non-ELF file) or a negative errno
 * when the file cannot be read or is malformed (-ENOEXEC). */
int elf_info_of(const struct elf_file *f, struct elf_info *ret);
int elf_info_read(int fd, struct elf_info *ret);

/* Calls on_library with each library the file names in DT_NEEDED, and on_import with each symbol
 * it takes from other objects (undefined in its dynamic symbol table). 0 or a negative errno. */
int elf_needs_of(const struct elf_file *f, void (*on_library)(const char *name, void *data),
                 void (*on_import)(const char *name, void *data), void *data);

/* Calls match with the file's bytes that are loaded into memory (each PT_LOAD segment's: code,
 * read-only data, data), where the text a program uses at run time is, until it returns true; not
 * debugging information or symbol tables, which it never reads, nor GLib's compiled-in resources
 * (files it reads as data). Returns 1 then, 0 when none matched, or a negative errno. */
int elf_search_loaded(const struct elf_file *f, bool (*match)(const char *bytes, size_t size, void *data),
                      void *data);

/* A symbol the file defines in its dynamic symbol table: under exec, the libraries' references to
 * this name bind to it. */
struct elf_export {
        char *name;
        char *version; /* the version it is bound to, NULL when unversioned */
        uint64_t value; /* st_value: its address relative to the load address */
        uint64_t size;
        bool copied;   /* its bytes come from a library through a copy relocation */
        bool copy_only; /* copied, and no other relocation of the file refers to it */
        uint16_t shndx; /* its st_shndx */
        uint64_t sym_offset; /* where its Elf64_Sym is in the file */
        uint64_t sym_addr;   /* ... and in memory, from the load address */
        bool hidden;   /* a non-default version (name@VERSION, not @@): no unversioned reference binds to it */
        bool weak_function; /* STB_WEAK and STT_FUNC: as a rule a C++ inline function or template instance */
        /* STB_WEAK and STT_OBJECT, a C++ class's type information or its name (_ZTI, _ZTS): each object
         * that uses the class has a copy, constant and alike, and the C++ library compares them by name */
        bool weak_type_info;
};

struct elf_exports {
        struct elf_export *items;
        size_t n;
};

/* Reads the defined global symbols of the ELF file already read into f, or open at fd, through its
 * section headers (a file without them exports nothing here). Returns 0 or a negative errno. */
int elf_exports_of(const struct elf_file *f, struct elf_exports *ret);
int elf_exports_read(int fd, struct elf_exports *ret);
void elf_exports_done(struct elf_exports *e);
