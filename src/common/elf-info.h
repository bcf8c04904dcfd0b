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
        bool has_tls;          /* PT_TLS present */
        bool has_preinit;      /* DT_PREINIT_ARRAY: only ld.so runs it, and only for the main program */
        bool has_rpath;        /* DT_RPATH (searched for the main program's whole closure) */
        bool origin_in_path;   /* $ORIGIN in DT_RPATH or DT_RUNPATH */
        bool exports_main;     /* a defined, global `main` in the dynamic symbol table */
        size_t copy_relocs;    /* copy relocations in the dynamic relocation table */
        size_t needed;         /* DT_NEEDED entries */
        bool pie_flag;         /* DF_1_PIE set in DT_FLAGS_1 */
        off_t flags_1_offset;  /* file offset of the DT_FLAGS_1 value, when pie_flag */
};

/* Reads the ELF file open at fd. Returns 0 (info filled, is_elf false for a non-ELF file) or a
 * negative errno when the file cannot be read or is malformed (-ENOEXEC). */
int elf_info_read(int fd, struct elf_info *ret);
