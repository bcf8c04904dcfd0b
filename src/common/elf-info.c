/* SPDX-License-Identifier: MIT */
/* Reads an ELF file, checking every offset against the file size: the file comes from a client
 * and may be anything. */
#include "elf-info.h"

#include <elf.h>
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch.h"
#include "elf-image.h"

#define ELF_MAX_FILE (1ull << 30)

/* Translates a virtual address to a file offset through the PT_LOAD segments. */
int elf_vaddr_to_offset(const struct image *im, uint64_t vaddr, uint64_t len, uint64_t *ret) {
        for (unsigned i = 0; i < im->ehdr->e_phnum; i++) {
                const Elf64_Phdr *p = &im->phdr[i];
                if (p->p_type != PT_LOAD)
                        continue;
                if (vaddr >= p->p_vaddr && vaddr - p->p_vaddr <= p->p_filesz &&
                    len <= p->p_filesz - (vaddr - p->p_vaddr)) {
                        *ret = p->p_offset + (vaddr - p->p_vaddr);
                        return 0;
                }
        }
        return -ENOEXEC;
}

static void read_program_headers(const struct image *im, struct elf_info *info) {
        for (unsigned i = 0; i < im->ehdr->e_phnum; i++) {
                const Elf64_Phdr *p = &im->phdr[i];
                switch (p->p_type) {
                case PT_INTERP: {
                        const char *s = elf_at(im, p->p_offset, p->p_filesz, 1);
                        info->has_interp = true;
                        if (s && p->p_filesz > 0 && p->p_filesz < sizeof info->interp)
                                memcpy(info->interp, s, p->p_filesz);
                        break;
                }
                case PT_TLS:
                        info->has_tls = true;
                        info->tls_vaddr = p->p_vaddr;
                        info->tls_offset = p->p_offset;
                        info->tls_filesz = p->p_filesz;
                        info->tls_memsz = p->p_memsz;
                        info->tls_align = p->p_align;
                        break;
                case PT_PHDR:
                        info->phdr_vaddr = p->p_vaddr;
                        break;
                }
        }
}

/* Where the loader maps the program headers when there is no PT_PHDR to say so. */
static uint64_t headers_vaddr(const struct image *im) {
        uint64_t off = im->ehdr->e_phoff;
        for (unsigned i = 0; i < im->ehdr->e_phnum; i++) {
                const Elf64_Phdr *p = &im->phdr[i];
                if (p->p_type == PT_LOAD && off >= p->p_offset && off - p->p_offset < p->p_filesz)
                        return p->p_vaddr + (off - p->p_offset);
        }
        return 0;
}

static bool has_origin(const char *s, size_t max) {
        size_t l = strnlen(s, max);
        return memmem(s, l, "$ORIGIN", 7) || memmem(s, l, "${ORIGIN}", 9);
}

/* A sanitizer's runtime that must be the first object of its process (AddressSanitizer,
 * ThreadSanitizer, LeakSanitizer, HWASan; GCC's and clang's): loaded into a daemon that has started
 * already, it ends the process. */
static bool is_sanitizer_runtime(const char *name, size_t max) {
        static const char *const prefixes[] = { "libasan.so", "libtsan.so", "liblsan.so", "libhwasan.so",
                                                "libclang_rt.asan", "libclang_rt.tsan", "libclang_rt.hwasan" };
        size_t l = strnlen(name, max);
        for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
                if (l >= strlen(prefixes[i]) && strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
                        return true;
        return false;
}

static const Elf64_Shdr *section_headers(const struct image *im);

/* crti's _fini is all of the .fini section (a few instructions: the C runtime's prologue and
 * epilogue); -Wl,-fini= points DT_FINI at a function elsewhere. Unsure (no section headers): own. */
static bool is_own_fini(const struct image *im, uint64_t fini) {
        const Elf64_Ehdr *e = (const Elf64_Ehdr *) im->data;
        const Elf64_Shdr *sh = section_headers(im);
        for (unsigned i = 0; sh && i < e->e_shnum; i++)
                if (sh[i].sh_addr == fini && sh[i].sh_type == SHT_PROGBITS && (sh[i].sh_flags & SHF_EXECINSTR) &&
                    sh[i].sh_size <= 64)
                        return false;
        return true;
}

static int read_dynamic(const struct image *im, const Elf64_Phdr *dynp, struct elf_info *info) {
        const Elf64_Dyn *dyn = elf_at(im, dynp->p_offset, dynp->p_filesz, _Alignof(Elf64_Dyn));
        if (!dyn)
                return -ENOEXEC;
        size_t n = dynp->p_filesz / sizeof *dyn;
        uint64_t strtab = 0, strsz = 0;
        uint64_t path_offsets[8], first_needed = UINT64_MAX;
        size_t npaths = 0;

        for (size_t i = 0; i < n && dyn[i].d_tag != DT_NULL; i++) {
                switch (dyn[i].d_tag) {
                case DT_NEEDED:
                        if (info->needed++ == 0)
                                first_needed = dyn[i].d_un.d_val;
                        break;
                case DT_STRTAB:
                        strtab = dyn[i].d_un.d_ptr;
                        break;
                case DT_STRSZ:
                        strsz = dyn[i].d_un.d_val;
                        break;
                case DT_PREINIT_ARRAY:
                        info->has_preinit = true;
                        break;
                case DT_SONAME:
                        info->has_soname = true;
                        break;
                case DT_INIT:
                        info->init = dyn[i].d_un.d_ptr;
                        info->init_tag_offset = (off_t) (dynp->p_offset + i * sizeof *dyn);
                        break;
                case DT_INIT_ARRAY:
                        info->init_array = dyn[i].d_un.d_ptr;
                        break;
                case DT_FINI:
                        info->own_fini = dyn[i].d_un.d_ptr && is_own_fini(im, dyn[i].d_un.d_ptr);
                        break;
                case DT_INIT_ARRAYSZ:
                        info->init_arraysz = dyn[i].d_un.d_val;
                        info->init_arraysz_offset = (off_t) (dynp->p_offset + i * sizeof *dyn +
                                                             offsetof(Elf64_Dyn, d_un));
                        break;
                case DT_RPATH:
                case DT_RUNPATH:
                        if (dyn[i].d_tag == DT_RPATH)
                                info->has_rpath = true;
                        if (npaths < 8)
                                path_offsets[npaths++] = dyn[i].d_un.d_val;
                        break;
                case DT_FLAGS_1:
                        if (dyn[i].d_un.d_val & DF_1_PIE) {
                                info->pie_flag = true;
                                info->flags_1_offset = (off_t) (dynp->p_offset + i * sizeof *dyn +
                                                                offsetof(Elf64_Dyn, d_un));
                        }
                        break;
                }
        }

        uint64_t stroff;
        if (strtab && strsz && elf_vaddr_to_offset(im, strtab, strsz, &stroff) == 0) {
                for (size_t i = 0; i < npaths; i++) {
                        const char *s = elf_at(im, stroff + path_offsets[i], 1, 1);
                        if (s && path_offsets[i] < strsz && has_origin(s, strsz - path_offsets[i]))
                                info->origin_in_path = true;
                }
                const char *first = first_needed < strsz ? elf_at(im, stroff + first_needed, 1, 1) : NULL;
                info->needs_sanitizer_runtime = first && is_sanitizer_runtime(first, strsz - first_needed);
        }
        return 0;
}

static bool find_main(const struct image *im);

/* im with its ELF header and program headers found and checked (a 64-bit file). */
static int map_headers(const struct image *im, struct image *m) {
        *m = *im;
        m->ehdr = elf_at(im, 0, sizeof(Elf64_Ehdr), 1);
        if (!m->ehdr || m->ehdr->e_phentsize != sizeof(Elf64_Phdr))
                return -ENOEXEC;
        m->phdr = elf_at(im, m->ehdr->e_phoff, (uint64_t) m->ehdr->e_phnum * sizeof(Elf64_Phdr),
                         _Alignof(Elf64_Phdr));
        return m->phdr ? 0 : -ENOEXEC;
}

/* The PT_DYNAMIC header of m (its headers mapped), the last when there are several, as the loader's. */
static const Elf64_Phdr *dynamic_segment(const struct image *m) {
        const Elf64_Phdr *dyn = NULL;
        for (unsigned i = 0; i < m->ehdr->e_phnum; i++)
                if (m->phdr[i].p_type == PT_DYNAMIC)
                        dyn = &m->phdr[i];
        return dyn;
}

static int parse(const struct image *im, struct elf_info *info) {
        const unsigned char *ident = im->data;
        if (im->size < EI_NIDENT || memcmp(ident, ELFMAG, SELFMAG) != 0)
                return 0;
        info->is_elf = true;
        if (ident[EI_CLASS] != ELFCLASS64)
                return 0;
        info->is_64bit = true;

        struct image m;
        int r = map_headers(im, &m);
        if (r < 0)
                return r;
        info->machine_matches = m.ehdr->e_machine == HS_ELF_MACHINE;
        info->is_dyn = m.ehdr->e_type == ET_DYN;
        info->entry = m.ehdr->e_entry;
        info->phnum = m.ehdr->e_phnum;
        info->reads_own_exe = memmem(im->data, im->size, "/proc/self/exe", 14) != NULL;
        read_program_headers(&m, info);
        const Elf64_Phdr *dyn = dynamic_segment(&m);
        info->has_dynamic = dyn != NULL;
        if (!info->phdr_vaddr)
                info->phdr_vaddr = headers_vaddr(&m);
        if (dyn) {
                r = read_dynamic(&m, dyn, info);
                if (r < 0)
                        return r;
                elf_tls_read_users(&m, dyn, info);
        }
        info->exports_main = find_main(&m);
        return 0;
}

/* Files are read, never mapped: a file truncated while we parse it would raise SIGBUS through a
 * mapping, and the daemon must survive anything a client hands it. A short read is such a file. */
static int pread_full(int fd, uint8_t *buf, uint64_t len, uint64_t off) {
        for (uint64_t got = 0; got < len;) {
                ssize_t n = pread(fd, buf + got, len - got, (off_t) (off + got));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -ENOEXEC;
                got += (uint64_t) n;
        }
        return 0;
}

/* The size of the regular file open at fd, within what the readers take. */
static int regular_file_size(int fd, size_t *ret) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EACCES;
        if ((uint64_t) st.st_size > ELF_MAX_FILE)
                return -EFBIG;
        *ret = (size_t) st.st_size;
        return 0;
}

/* Reads the regular file open at fd into *im (data NULL for a file too short to be ELF). */
static int image_load(int fd, struct image *im) {
        size_t size = 0;
        *im = (struct image){ 0 };
        int r = regular_file_size(fd, &size);
        if (r < 0 || size < EI_NIDENT)
                return r;
        uint8_t *data = malloc(size);
        if (!data)
                return -ENOMEM;
        r = pread_full(fd, data, size, 0);
        if (r < 0)
                return free(data), r;
        *im = (struct image){ .data = data, .size = size };
        return 0;
}

int elf_file_read(int fd, struct elf_file *ret) {
        struct image im;
        int r = image_load(fd, &im);
        if (r >= 0)
                *ret = (struct elf_file){ .data = im.data, .size = im.size };
        return r;
}

void elf_file_done(struct elf_file *f) {
        free((void *) f->data);
        *f = (struct elf_file){ 0 };
}

static struct image image_of(const struct elf_file *f) {
        return (struct image){ .data = f->data, .size = f->size };
}

/* Whether the file is read and is a 64-bit ELF file, the only kind the readers below look into. */
static bool is_elf64(const struct image *im) {
        return im->data && im->size >= sizeof(Elf64_Ehdr) && memcmp(im->data, ELFMAG, SELFMAG) == 0 &&
               im->data[EI_CLASS] == ELFCLASS64;
}

int elf_info_of(const struct elf_file *f, struct elf_info *ret) {
        struct elf_info info = { 0 };
        struct image im = image_of(f);
        int r = im.data ? parse(&im, &info) : 0;
        if (r < 0)
                return r;
        *ret = info;
        return 0;
}

int elf_info_read(int fd, struct elf_info *ret) {
        struct elf_file f = { 0 };
        int r = elf_file_read(fd, &f);
        if (r >= 0)
                r = elf_info_of(&f, ret);
        elf_file_done(&f);
        return r;
}

/* What the tables we read of a section need. */
static size_t section_alignment(uint32_t type) {
        switch (type) {
        case SHT_DYNSYM:
                return _Alignof(Elf64_Sym);
        case SHT_GNU_versym:
                return _Alignof(Elf64_Half);
        case SHT_GNU_verneed:
        case SHT_GNU_verdef:
                return _Alignof(Elf64_Word);
        default:
                return 1;
        }
}

/* Whether the ELF header declares section headers of the form we read (a file may have none). */
static bool declares_section_headers(const Elf64_Ehdr *e) {
        return e->e_shentsize == sizeof(Elf64_Shdr) && e->e_shnum > 0;
}

/* The section headers of im (its ELF header in place), or NULL when it declares none or they are
 * not all in it. */
static const Elf64_Shdr *section_headers(const struct image *im) {
        const Elf64_Ehdr *e = (const Elf64_Ehdr *) im->data;
        if (!declares_section_headers(e))
                return NULL;
        return elf_at(im, e->e_shoff, (uint64_t) e->e_shnum * sizeof(Elf64_Shdr), _Alignof(Elf64_Shdr));
}

int elf_find_symbol_tables(const struct image *im, struct symbol_tables *t) {
        const Elf64_Ehdr *e = (const Elf64_Ehdr *) im->data;
        *t = (struct symbol_tables){ 0 };
        if (!declares_section_headers(e))
                return 0;
        const Elf64_Shdr *sh = section_headers(im);
        if (!sh)
                return -ENOEXEC;
        size_t nversym = 0;
        for (unsigned i = 0; i < e->e_shnum; i++) {
                const void *data = elf_at(im, sh[i].sh_offset, sh[i].sh_size, section_alignment(sh[i].sh_type));
                if (sh[i].sh_type != SHT_NOBITS && !data)
                        return -ENOEXEC;
                switch (sh[i].sh_type) {
                case SHT_DYNSYM:
                        if (sh[i].sh_link >= e->e_shnum)
                                return -ENOEXEC;
                        t->sym = data;
                        t->nsym = sh[i].sh_size / sizeof(Elf64_Sym);
                        t->sym_addr = sh[i].sh_addr;
                        t->str = elf_at(im, sh[sh[i].sh_link].sh_offset, sh[sh[i].sh_link].sh_size, 1);
                        t->strsz = sh[sh[i].sh_link].sh_size;
                        if (!t->str || t->strsz == 0 || t->str[t->strsz - 1] != '\0')
                                return -ENOEXEC;
                        break;
                case SHT_GNU_versym:
                        t->versym = data;
                        nversym = sh[i].sh_size / sizeof(uint16_t);
                        break;
                case SHT_GNU_verneed:
                        t->verneed = data;
                        t->verneed_size = sh[i].sh_size;
                        break;
                case SHT_GNU_verdef:
                        t->verdef = data;
                        t->verdef_size = sh[i].sh_size;
                        break;
                }
        }
        return t->versym && nversym < t->nsym ? -ENOEXEC : 0;
}

static const char *table_string(const struct symbol_tables *t, uint64_t off) {
        return off < t->strsz ? t->str + off : NULL;
}

/* Looks for a defined global function `main` in the dynamic symbol table (a file without section
 * headers simply does not export main for us). */
static bool find_main(const struct image *im) {
        struct symbol_tables t;
        if (elf_find_symbol_tables(im, &t) < 0 || !t.sym)
                return false;
        for (size_t i = 1; i < t.nsym; i++) {
                const Elf64_Sym *s = &t.sym[i];
                const char *name = table_string(&t, s->st_name);
                if (name && s->st_shndx != SHN_UNDEF && ELF64_ST_BIND(s->st_info) != STB_LOCAL &&
                    ELF64_ST_TYPE(s->st_info) == STT_FUNC && strcmp(name, "main") == 0)
                        return true;
        }
        return false;
}

/* The name of version index ndx, from the file's own definitions or its needs. Every step of both
 * chains is checked against its section. */
static const char *version_name(const struct symbol_tables *t, uint16_t ndx) {
        size_t off = 0;
        const size_t a = _Alignof(Elf64_Word); /* of every record of both chains */
        for (unsigned n = 0; t->verdef && n < 4096 && off + sizeof(Elf64_Verdef) <= t->verdef_size && off % a == 0;
             n++) {
                const Elf64_Verdef *d = (const Elf64_Verdef *) (t->verdef + off);
                if (d->vd_ndx == ndx && off + d->vd_aux + sizeof(Elf64_Verdaux) <= t->verdef_size &&
                    (off + d->vd_aux) % a == 0)
                        return table_string(t, ((const Elf64_Verdaux *) (t->verdef + off + d->vd_aux))->vda_name);
                if (d->vd_next == 0)
                        break;
                off += d->vd_next;
        }
        off = 0;
        for (unsigned n = 0; t->verneed && n < 4096 && off + sizeof(Elf64_Verneed) <= t->verneed_size && off % a == 0;
             n++) {
                const Elf64_Verneed *v = (const Elf64_Verneed *) (t->verneed + off);
                size_t aoff = off + v->vn_aux;
                for (unsigned k = 0; k < v->vn_cnt && aoff + sizeof(Elf64_Vernaux) <= t->verneed_size && aoff % a == 0;
                     k++) {
                        const Elf64_Vernaux *a = (const Elf64_Vernaux *) (t->verneed + aoff);
                        if (a->vna_other == ndx)
                                return table_string(t, a->vna_name);
                        if (a->vna_next == 0)
                                break;
                        aoff += a->vna_next;
                }
                if (v->vn_next == 0)
                        break;
                off += v->vn_next;
        }
        return NULL;
}

/* Where the file's dynamic relocation table (DT_RELA, DT_RELASZ) is in the file: 0 with *len 0 when
 * it has none, -ENOEXEC when its headers or its table lie outside the file. */
static int rela_range(const struct image *im, uint64_t *ret_off, uint64_t *ret_len) {
        struct image m;
        *ret_off = *ret_len = 0;
        if (map_headers(im, &m) < 0)
                return -ENOEXEC;
        const Elf64_Phdr *dynp = dynamic_segment(&m);
        const Elf64_Dyn *dyn = dynp ? elf_at(im, dynp->p_offset, dynp->p_filesz, _Alignof(Elf64_Dyn)) : NULL;
        size_t ndyn = dynp ? dynp->p_filesz / sizeof *dyn : 0;
        uint64_t rela = 0, relasz = 0;
        for (size_t i = 0; dyn && i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
                if (dyn[i].d_tag == DT_RELA)
                        rela = dyn[i].d_un.d_ptr;
                else if (dyn[i].d_tag == DT_RELASZ)
                        relasz = dyn[i].d_un.d_val;
        }
        if (relasz == 0)
                return 0;
        if (elf_vaddr_to_offset(&m, rela, relasz, ret_off) < 0)
                return -ENOEXEC;
        *ret_len = relasz;
        return 0;
}

/* Marks the exports that the file's copy relocations fill, by symbol index: 1, or 2 when another
 * of its relocations refers to the symbol too. */
static int mark_copied(const struct image *im, uint8_t *copied, size_t nsym) {
        uint64_t off, relasz;
        int r = rela_range(im, &off, &relasz);
        if (r < 0 || relasz == 0)
                return r;
        const Elf64_Rela *rel = elf_at(im, off, relasz, _Alignof(Elf64_Rela));
        for (uint64_t i = 0; rel && i < relasz / sizeof *rel; i++) {
                uint64_t idx = ELF64_R_SYM(rel[i].r_info);
                bool copy = ELF64_R_TYPE(rel[i].r_info) == HS_R_COPY;
                if (copy && idx >= nsym)
                        return -ENOEXEC;
                if (copy)
                        copied[idx] |= 1;
                else if (idx != 0 && idx < nsym)
                        copied[idx] |= 2;
        }
        for (size_t i = 0; i < nsym; i++)
                copied[i] = copied[i] & 1 ? (uint8_t) (copied[i] & 2 ? 2 : 1) : 0;
        return 0;
}

static int add_export(struct elf_exports *ex, const struct image *im, const struct symbol_tables *t, size_t i,
                      uint8_t copied) {
        const Elf64_Sym *s = &t->sym[i];
        const char *name = table_string(t, s->st_name);
        if (!name)
                return -ENOEXEC;
        uint16_t v = t->versym ? t->versym[i] : 1;
        const char *version = (v & 0x7fff) > 1 ? version_name(t, v & 0x7fff) : NULL;
        struct elf_export *x = &ex->items[ex->n];
        *x = (struct elf_export){ .value = s->st_value, .size = s->st_size, .copied = copied != 0,
                                  .copy_only = copied == 1, .hidden = (v & 0x8000) != 0, .shndx = s->st_shndx,
                                  .weak_function = ELF64_ST_BIND(s->st_info) == STB_WEAK &&
                                                   ELF64_ST_TYPE(s->st_info) == STT_FUNC,
                                  .weak_type_info = ELF64_ST_BIND(s->st_info) == STB_WEAK &&
                                                    ELF64_ST_TYPE(s->st_info) == STT_OBJECT &&
                                                    (strncmp(name, "_ZTI", 4) == 0 || strncmp(name, "_ZTS", 4) == 0),
                                  .sym_offset = (uint64_t) ((const uint8_t *) s - im->data),
                                  .sym_addr = t->sym_addr + i * sizeof(Elf64_Sym) };
        x->name = strdup(name);
        x->version = version ? strdup(version) : NULL;
        if (!x->name || (version && !x->version)) {
                free(x->name);
                free(x->version);
                return -ENOMEM;
        }
        ex->n++;
        return 0;
}

static int read_exports(const struct image *im, struct elf_exports *ex) {
        struct symbol_tables t;
        int r = elf_find_symbol_tables(im, &t);
        if (r < 0 || !t.sym || t.nsym == 0)
                return r;
        uint8_t *copied = calloc(t.nsym, sizeof *copied);
        ex->items = calloc(t.nsym, sizeof *ex->items);
        if (!copied || !ex->items) {
                free(copied);
                return -ENOMEM;
        }
        r = mark_copied(im, copied, t.nsym);
        for (size_t i = 1; r >= 0 && i < t.nsym; i++) {
                const Elf64_Sym *s = &t.sym[i];
                if (s->st_shndx == SHN_UNDEF || ELF64_ST_BIND(s->st_info) == STB_LOCAL ||
                    ELF64_ST_VISIBILITY(s->st_other) == STV_HIDDEN || ELF64_ST_TYPE(s->st_info) == STT_TLS)
                        continue;
                r = add_export(ex, im, &t, i, copied[i]);
        }
        free(copied);
        return r;
}

int elf_exports_of(const struct elf_file *f, struct elf_exports *ret) {
        struct image im = image_of(f);
        *ret = (struct elf_exports){ 0 };
        int r = is_elf64(&im) ? read_exports(&im, ret) : 0;
        if (r < 0)
                elf_exports_done(ret);
        return r;
}

/* Reads len bytes at off into the image's own place for them; a range outside the file is left
 * unread, for the reader's bounds check to refuse. */
static int read_range(int fd, const struct image *im, uint64_t off, uint64_t len) {
        if (off > im->size || len > im->size - off)
                return 0;
        return pread_full(fd, (uint8_t *) im->data + off, len, off);
}

/* Of the 64-bit ELF file at fd, what read_exports looks at, each part at its own offset in a zeroed
 * anonymous mapping of the file's size: the headers, the dynamic symbol tables, the dynamic section
 * and the relocations. The daemon reads the exports of every library of every program it registers
 * as it starts, and those parts are a small share of a library (GTK 3's 8.5 MB): the rest is neither
 * read nor given a page. */
static int read_export_parts(int fd, const struct image *im) {
        int r = read_range(fd, im, 0, sizeof(Elf64_Ehdr));
        if (r < 0 || !is_elf64(im))
                return r;
        const Elf64_Ehdr *e = (const Elf64_Ehdr *) im->data;
        if ((r = read_range(fd, im, e->e_phoff, (uint64_t) e->e_phnum * sizeof(Elf64_Phdr))) < 0 ||
            (r = read_range(fd, im, e->e_shoff, (uint64_t) e->e_shnum * sizeof(Elf64_Shdr))) < 0)
                return r;
        const Elf64_Shdr *sh = section_headers(im);
        for (unsigned i = 0; sh && i < e->e_shnum && r >= 0; i++) {
                Elf64_Word type = sh[i].sh_type;
                if (type == SHT_DYNSYM || type == SHT_GNU_versym || type == SHT_GNU_verneed || type == SHT_GNU_verdef)
                        r = read_range(fd, im, sh[i].sh_offset, sh[i].sh_size);
                if (r >= 0 && type == SHT_DYNSYM && sh[i].sh_link < e->e_shnum)
                        r = read_range(fd, im, sh[sh[i].sh_link].sh_offset, sh[sh[i].sh_link].sh_size);
        }
        struct image m;
        const Elf64_Phdr *dynp = r >= 0 && map_headers(im, &m) >= 0 ? dynamic_segment(&m) : NULL;
        if (dynp)
                r = read_range(fd, im, dynp->p_offset, dynp->p_filesz);
        uint64_t off, len;
        if (r >= 0 && rela_range(im, &off, &len) >= 0 && len > 0)
                r = read_range(fd, im, off, len);
        return r;
}

int elf_exports_read(int fd, struct elf_exports *ret) {
        size_t size = 0;
        *ret = (struct elf_exports){ 0 };
        int r = regular_file_size(fd, &size);
        if (r < 0 || size < sizeof(Elf64_Ehdr))
                return r; /* too short to be ELF: exports nothing, as elf_exports_of says of it */
        void *data = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (data == MAP_FAILED)
                return -errno;
        struct image im = { .data = data, .size = size };
        r = read_export_parts(fd, &im);
        if (r >= 0 && is_elf64(&im))
                r = read_exports(&im, ret);
        if (r < 0)
                elf_exports_done(ret);
        munmap(data, size);
        return r;
}

void elf_exports_done(struct elf_exports *e) {
        for (size_t i = 0; i < e->n; i++) {
                free(e->items[i].name);
                free(e->items[i].version);
        }
        free(e->items);
        *e = (struct elf_exports){ 0 };
}

static void read_needed_libraries(const struct image *im, const Elf64_Phdr *dynp,
                                  void (*on_library)(const char *name, void *data), void *data) {
        const Elf64_Dyn *dyn = elf_at(im, dynp->p_offset, dynp->p_filesz, _Alignof(Elf64_Dyn));
        size_t n = dyn ? dynp->p_filesz / sizeof *dyn : 0;
        uint64_t strtab = 0, strsz = 0, stroff;
        for (size_t i = 0; i < n && dyn[i].d_tag != DT_NULL; i++)
                if (dyn[i].d_tag == DT_STRTAB)
                        strtab = dyn[i].d_un.d_ptr;
                else if (dyn[i].d_tag == DT_STRSZ)
                        strsz = dyn[i].d_un.d_val;
        if (!strtab || !strsz || elf_vaddr_to_offset(im, strtab, strsz, &stroff) < 0)
                return;
        const char *str = elf_at(im, stroff, strsz, 1);
        for (size_t i = 0; str && i < n && dyn[i].d_tag != DT_NULL; i++)
                if (dyn[i].d_tag == DT_NEEDED && dyn[i].d_un.d_val < strsz &&
                    memchr(str + dyn[i].d_un.d_val, '\0', strsz - dyn[i].d_un.d_val))
                        on_library(str + dyn[i].d_un.d_val, data);
}

static int read_needs(const struct image *im, void (*on_library)(const char *name, void *data),
                      void (*on_import)(const char *name, void *data), void *data) {
        struct image m;
        int r = map_headers(im, &m);
        for (unsigned i = 0; r >= 0 && i < m.ehdr->e_phnum; i++)
                if (m.phdr[i].p_type == PT_DYNAMIC)
                        read_needed_libraries(&m, &m.phdr[i], on_library, data);
        struct symbol_tables t;
        if (r >= 0)
                r = elf_find_symbol_tables(&m, &t);
        for (size_t i = 1; r >= 0 && t.sym && i < t.nsym; i++) {
                const char *name = table_string(&t, t.sym[i].st_name);
                if (t.sym[i].st_shndx == SHN_UNDEF && name && *name)
                        on_import(name, data);
        }
        return r;
}

#define MAX_RESOURCE_SECTIONS 16

struct file_range {
        uint64_t off, end;
};

/* The file ranges of the sections that hold GLib's compiled-in resources (".gresource.NAME", as
 * glib-compile-resources names them): files the program reads as data, often compressed, whose
 * bytes may spell any short name ("\xb0TZ" in gtk3-demo's) without being text the program uses. */
static size_t resource_sections(const struct image *im, struct file_range *r, size_t max) {
        const Elf64_Ehdr *e = (const Elf64_Ehdr *) im->data;
        const Elf64_Shdr *sh = e->e_shstrndx < e->e_shnum ? section_headers(im) : NULL;
        const char *names = sh ? elf_at(im, sh[e->e_shstrndx].sh_offset, sh[e->e_shstrndx].sh_size, 1) : NULL;
        uint64_t size = sh ? sh[e->e_shstrndx].sh_size : 0;
        if (!names || size == 0 || names[size - 1] != '\0')
                return 0;
        size_t n = 0;
        for (unsigned i = 0; i < e->e_shnum && n < max; i++)
                if (sh[i].sh_type != SHT_NOBITS && sh[i].sh_name < size &&
                    strncmp(names + sh[i].sh_name, ".gresource.", strlen(".gresource.")) == 0)
                        r[n++] = (struct file_range){ sh[i].sh_offset, sh[i].sh_offset + sh[i].sh_size };
        return n;
}

/* match over the bytes from off to end but those in skipped: 1 when it matched, else 0. */
static int search_range(const struct image *m, uint64_t off, uint64_t end, const struct file_range *skipped,
                        size_t nskipped, bool (*match)(const char *bytes, size_t size, void *data), void *data) {
        while (off < end) {
                const struct file_range *next = NULL; /* the first skipped range from off on */
                for (size_t k = 0; k < nskipped; k++)
                        if (skipped[k].end > off && skipped[k].off < end && (!next || skipped[k].off < next->off))
                                next = &skipped[k];
                uint64_t stop = !next ? end : next->off > off ? next->off : off;
                const char *bytes = stop > off ? elf_at(m, off, stop - off, 1) : NULL;
                if (bytes && match(bytes, stop - off, data))
                        return 1;
                if (!next)
                        break;
                off = next->end;
        }
        return 0;
}

static int search_loaded(const struct image *im, bool (*match)(const char *bytes, size_t size, void *data),
                         void *data) {
        struct image m;
        int r = map_headers(im, &m);
        struct file_range resources[MAX_RESOURCE_SECTIONS];
        size_t nresources = r >= 0 ? resource_sections(im, resources, MAX_RESOURCE_SECTIONS) : 0;
        for (unsigned i = 0; r >= 0 && i < m.ehdr->e_phnum; i++)
                if (m.phdr[i].p_type == PT_LOAD &&
                    search_range(&m, m.phdr[i].p_offset, m.phdr[i].p_offset + m.phdr[i].p_filesz, resources,
                                 nresources, match, data))
                        return 1;
        return r;
}

int elf_search_loaded(const struct elf_file *f, bool (*match)(const char *bytes, size_t size, void *data),
                      void *data) {
        struct image im = image_of(f);
        return is_elf64(&im) ? search_loaded(&im, match, data) : 0;
}

int elf_needs_of(const struct elf_file *f, void (*on_library)(const char *name, void *data),
                 void (*on_import)(const char *name, void *data), void *data) {
        struct image im = image_of(f);
        return is_elf64(&im) ? read_needs(&im, on_library, on_import, data) : 0;
}
