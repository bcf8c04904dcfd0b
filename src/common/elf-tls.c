/* SPDX-License-Identifier: MIT */
/* What refers to an executable's own thread-local block (PT_TLS), which decides whether the daemon
 * can give the block the place exec gives it (src/launcher/preload/tls-reserve.h): the relocations
 * that write inside its initial image, the TLS relocations that refer to it, and the thread-local
 * variables it exports; and whether its initial-exec code reaches another object's block. */
#include <string.h>

#include "arch.h"
#include "elf-image.h"

struct reloc_tables {
        uint64_t rela, relasz, jmprel, pltrelsz, relr, relrsz, rel, relsz, symtab;
        bool plt_is_rel;
};

static void read_reloc_tables(const struct image *im, const Elf64_Phdr *dynp, struct reloc_tables *t) {
        const Elf64_Dyn *dyn = elf_at(im, dynp->p_offset, dynp->p_filesz, _Alignof(Elf64_Dyn));
        size_t n = dyn ? dynp->p_filesz / sizeof *dyn : 0;
        *t = (struct reloc_tables){ 0 };
        for (size_t i = 0; i < n && dyn[i].d_tag != DT_NULL; i++) {
                uint64_t v = dyn[i].d_un.d_val;
                switch (dyn[i].d_tag) {
                case DT_RELA: t->rela = v; break;
                case DT_RELASZ: t->relasz = v; break;
                case DT_JMPREL: t->jmprel = v; break;
                case DT_PLTRELSZ: t->pltrelsz = v; break;
                case DT_PLTREL: t->plt_is_rel = v == DT_REL; break;
                case DT_RELR: t->relr = v; break;
                case DT_RELRSZ: t->relrsz = v; break;
                case DT_REL: t->rel = v; break;
                case DT_RELSZ: t->relsz = v; break;
                case DT_SYMTAB: t->symtab = v; break;
                }
        }
}

/* A table of the file's relocations in memory at vaddr, or NULL (none, or not in the file). */
static const void *reloc_table(const struct image *im, uint64_t vaddr, uint64_t size, size_t align) {
        uint64_t off;
        if (vaddr == 0 || size == 0 || elf_vaddr_to_offset(im, vaddr, size, &off) < 0)
                return NULL;
        return elf_at(im, off, size, align);
}

static bool writes_in_image(const struct elf_info *info, uint64_t where) {
        return where < info->tls_vaddr + info->tls_filesz && where + sizeof(uint64_t) > info->tls_vaddr;
}

/* One relocation at `where` of type `type` for symbol index `sym`. */
static void judge_reloc(const struct image *im, const struct reloc_tables *t, uint64_t where, uint64_t type,
                        uint64_t sym, struct elf_info *info) {
        if (writes_in_image(info, where))
                info->tls_image_relocated = true;
        if (!HS_R_IS_TLS(type))
                return;
        const Elf64_Sym *s = NULL;
        uint64_t off;
        if (sym != 0 && t->symtab && elf_vaddr_to_offset(im, t->symtab + sym * sizeof *s, sizeof *s, &off) == 0)
                s = elf_at(im, off, sizeof *s, _Alignof(Elf64_Sym));
        /* Symbol 0 is the file's own block; a symbol we cannot read might be too. */
        if (!s || s->st_shndx != SHN_UNDEF)
                info->tls_self_relocated = true;
        else if (HS_R_IS_TLS_STATIC(type))
                info->tls_static_elsewhere = true;
}

/* A REL or RELA table (entry_size tells which): both entries start with r_offset and r_info. */
static void judge_table(const struct image *im, const struct reloc_tables *t, uint64_t vaddr, uint64_t size,
                        size_t entry_size, struct elf_info *info) {
        const unsigned char *r = reloc_table(im, vaddr, size, _Alignof(Elf64_Rel));
        for (uint64_t i = 0; r && i < size / entry_size; i++) {
                Elf64_Rel e;
                memcpy(&e, r + i * entry_size, sizeof e);
                judge_reloc(im, t, e.r_offset, ELF64_R_TYPE(e.r_info), ELF64_R_SYM(e.r_info), info);
        }
        if (size && !r)
                info->tls_image_relocated = true; /* relocations we cannot read might write there */
}

/* DT_RELR (glibc 2.36): an address, then bitmaps of the 63 words that follow it. */
static void judge_relr(const struct image *im, const struct reloc_tables *t, struct elf_info *info) {
        const uint64_t *r = reloc_table(im, t->relr, t->relrsz, _Alignof(uint64_t));
        uint64_t where = 0;
        for (uint64_t i = 0; r && i < t->relrsz / sizeof *r; i++) {
                if ((r[i] & 1) == 0) {
                        if (writes_in_image(info, r[i]))
                                info->tls_image_relocated = true;
                        where = r[i] + sizeof(uint64_t);
                        continue;
                }
                uint64_t bits = r[i] >> 1;
                for (unsigned k = 0; bits; k++, bits >>= 1)
                        if ((bits & 1) && writes_in_image(info, where + k * sizeof(uint64_t)))
                                info->tls_image_relocated = true;
                where += 63 * sizeof(uint64_t);
        }
        if (t->relrsz && !r)
                info->tls_image_relocated = true;
}

/* Whether the dynamic symbol table defines a thread-local variable others can bind to; true when
 * it cannot be read (no section headers). */
static bool exports_tls(const struct image *im) {
        struct symbol_tables t;
        if (elf_find_symbol_tables(im, &t) < 0 || !t.sym)
                return true;
        for (size_t i = 1; i < t.nsym; i++) {
                const Elf64_Sym *s = &t.sym[i];
                if (ELF64_ST_TYPE(s->st_info) == STT_TLS && s->st_shndx != SHN_UNDEF &&
                    ELF64_ST_BIND(s->st_info) != STB_LOCAL && ELF64_ST_VISIBILITY(s->st_other) != STV_HIDDEN &&
                    ELF64_ST_VISIBILITY(s->st_other) != STV_INTERNAL)
                        return true;
        }
        return false;
}

/* Reads the TLS relocations (and, for a file with its own block, what writes in its initial image). */
void elf_tls_read_users(const struct image *im, const Elf64_Phdr *dynp, struct elf_info *info) {
        struct reloc_tables t;
        read_reloc_tables(im, dynp, &t);
        judge_table(im, &t, t.rela, t.relasz, sizeof(Elf64_Rela), info);
        judge_table(im, &t, t.rel, t.relsz, sizeof(Elf64_Rel), info);
        if (t.plt_is_rel)
                judge_table(im, &t, t.jmprel, t.pltrelsz, sizeof(Elf64_Rel), info);
        else
                judge_table(im, &t, t.jmprel, t.pltrelsz, sizeof(Elf64_Rela), info);
        judge_relr(im, &t, info);
        info->tls_exported = info->has_tls && exports_tls(im);
}
