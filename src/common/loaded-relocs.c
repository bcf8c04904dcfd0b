/* SPDX-License-Identifier: MIT */
/* Only RELA relocation tables are read: both supported architectures use them (a REL port adds
 * their reading here). */
#include "loaded-relocs.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch.h"

struct tables {
        uintptr_t base;
        const ElfW(Sym) *sym;
        const char *str;
        const ElfW(Half) *versym;
        const ElfW(Verdef) *verdef;
        const ElfW(Verneed) *verneed;
        const ElfW(Rela) *rela, *jmprel;
        size_t nrela, nrelative, njmprel;
};

/* glibc rewrites the pointers of a writable dynamic section to absolute addresses when it loads the
 * object; on architectures with a read-only one they stay relative to the load address. */
static const void *pointer(const struct tables *t, ElfW(Addr) p) {
        return (const void *) (p < t->base ? t->base + p : p);
}

static void read_tables(const struct link_map *l, struct tables *t) {
        *t = (struct tables){ .base = l->l_addr };
        for (const ElfW(Dyn) *d = l->l_ld; d && d->d_tag != DT_NULL; d++)
                switch (d->d_tag) {
                case DT_SYMTAB:
                        t->sym = pointer(t, d->d_un.d_ptr);
                        break;
                case DT_STRTAB:
                        t->str = pointer(t, d->d_un.d_ptr);
                        break;
                case DT_VERSYM:
                        t->versym = pointer(t, d->d_un.d_ptr);
                        break;
                case DT_VERDEF:
                        t->verdef = pointer(t, d->d_un.d_ptr);
                        break;
                case DT_VERNEED:
                        t->verneed = pointer(t, d->d_un.d_ptr);
                        break;
                case DT_RELA:
                        t->rela = pointer(t, d->d_un.d_ptr);
                        break;
                case DT_RELASZ:
                        t->nrela = d->d_un.d_val / sizeof(ElfW(Rela));
                        break;
                case DT_RELACOUNT:
                        t->nrelative = d->d_un.d_val;
                        break;
                case DT_JMPREL:
                        t->jmprel = pointer(t, d->d_un.d_ptr);
                        break;
                case DT_PLTRELSZ:
                        t->njmprel = d->d_un.d_val / sizeof(ElfW(Rela));
                        break;
                }
}

static const char *version_name(const struct tables *t, ElfW(Half) ndx) {
        for (const ElfW(Verdef) *d = t->verdef; d;
             d = d->vd_next ? (const void *) ((const char *) d + d->vd_next) : NULL)
                if (d->vd_ndx == ndx)
                        return t->str + ((const ElfW(Verdaux) *) ((const char *) d + d->vd_aux))->vda_name;
        for (const ElfW(Verneed) *n = t->verneed; n;
             n = n->vn_next ? (const void *) ((const char *) n + n->vn_next) : NULL) {
                const ElfW(Vernaux) *a = (const void *) ((const char *) n + n->vn_aux);
                for (unsigned k = 0; k < n->vn_cnt; k++, a = (const void *) ((const char *) a + a->vna_next))
                        if (a->vna_other == ndx)
                                return t->str + a->vna_name;
        }
        return NULL;
}

static int walk_table(const struct tables *t, const ElfW(Rela) *r, size_t n, loaded_reloc_fn fn, void *userdata) {
        for (size_t i = 0; i < n; i++) {
                uint32_t idx = (uint32_t) ELF64_R_SYM(r[i].r_info);
                if (idx == 0)
                        continue;
                ElfW(Half) v = t->versym ? t->versym[idx] : 0;
                struct loaded_reloc lr = {
                        .slot = (uintptr_t *) (t->base + r[i].r_offset),
                        .addend = r[i].r_addend,
                        .type = (uint32_t) ELF64_R_TYPE(r[i].r_info),
                        .name = t->str + t->sym[idx].st_name,
                        .version = (v & 0x7fff) > 1 ? version_name(t, v & 0x7fff) : NULL,
                        .hidden_version = (v & 0x8000) != 0,
                };
                int k = fn(&lr, userdata);
                if (k != 0)
                        return k;
        }
        return 0;
}

bool loaded_reloc_is_address(const struct loaded_reloc *r) {
        return r->type == HS_R_GLOB_DAT || r->type == HS_R_ABS || r->type == HS_R_JUMP_SLOT;
}

int loaded_relocs_walk(const struct link_map *object, loaded_reloc_fn fn, void *userdata) {
        struct tables t;
        read_tables(object, &t);
        if (!t.sym || !t.str)
                return 0;
        /* The first DT_RELACOUNT entries are the relative ones. */
        size_t skip = t.nrelative <= t.nrela ? t.nrelative : 0;
        int r = t.rela ? walk_table(&t, t.rela + skip, t.nrela - skip, fn, userdata) : 0;
        if (r == 0 && t.jmprel)
                r = walk_table(&t, t.jmprel, t.njmprel, fn, userdata);
        return r;
}

struct relro_query {
        uintptr_t base, start, end;
};

static int find_relro(struct dl_phdr_info *info, size_t size, void *userdata) {
        struct relro_query *q = userdata;
        (void) size;
        if (info->dlpi_addr != q->base)
                return 0;
        for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *p = &info->dlpi_phdr[i];
                if (p->p_type == PT_GNU_RELRO) {
                        /* As the loader protects it: whole pages only, so a last partial page stays
                         * writable. */
                        uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
                        q->start = (info->dlpi_addr + p->p_vaddr) & ~(page - 1);
                        q->end = (info->dlpi_addr + p->p_vaddr + p->p_memsz) & ~(page - 1);
                }
        }
        return 1;
}

void loaded_relro_range(const struct link_map *object, uintptr_t *ret_start, uintptr_t *ret_end) {
        struct relro_query q = { .base = object->l_addr };
        dl_iterate_phdr(find_relro, &q);
        *ret_start = q.start;
        *ret_end = q.end;
}

int loaded_slot_write(uintptr_t *slot, uintptr_t value, uintptr_t relro_start, uintptr_t relro_end) {
        uintptr_t page_size = (uintptr_t) sysconf(_SC_PAGESIZE), page = (uintptr_t) slot & ~(page_size - 1);
        bool relro = (uintptr_t) slot >= relro_start && (uintptr_t) slot < relro_end;
        if (relro && mprotect((void *) page, page_size, PROT_READ | PROT_WRITE) < 0)
                return -errno;
        *slot = value;
        return relro && mprotect((void *) page, page_size, PROT_READ) < 0 ? -errno : 0;
}

bool loaded_needs(const struct link_map *object, const char *soname) {
        struct tables t;
        read_tables(object, &t);
        for (const ElfW(Dyn) *d = object->l_ld; t.str && d && d->d_tag != DT_NULL; d++)
                if (d->d_tag == DT_NEEDED && strcmp(t.str + d->d_un.d_val, soname) == 0)
                        return true;
        return false;
}
