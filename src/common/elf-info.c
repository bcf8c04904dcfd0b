/* SPDX-License-Identifier: MIT */
/* Reads an ELF file, checking every offset against the file size: the file comes from a client
 * and may be anything. */
#include "elf-info.h"

#include <elf.h>
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch.h"

#define ELF_MAX_FILE (1ull << 30)

struct image {
        const uint8_t *data;
        size_t size;
        const Elf64_Ehdr *ehdr;
        const Elf64_Phdr *phdr;
};

static const void *at(const struct image *im, uint64_t off, uint64_t len) {
        if (off > im->size || len > im->size - off)
                return NULL;
        return im->data + off;
}

/* Translates a virtual address to a file offset through the PT_LOAD segments. */
static int vaddr_to_offset(const struct image *im, uint64_t vaddr, uint64_t len, uint64_t *ret) {
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

static void read_program_headers(const struct image *im, struct elf_info *info, const Elf64_Phdr **ret_dyn) {
        for (unsigned i = 0; i < im->ehdr->e_phnum; i++) {
                const Elf64_Phdr *p = &im->phdr[i];
                switch (p->p_type) {
                case PT_DYNAMIC:
                        info->has_dynamic = true;
                        *ret_dyn = p;
                        break;
                case PT_INTERP: {
                        const char *s = at(im, p->p_offset, p->p_filesz);
                        info->has_interp = true;
                        if (s && p->p_filesz > 0 && p->p_filesz < sizeof info->interp)
                                memcpy(info->interp, s, p->p_filesz);
                        break;
                }
                case PT_TLS:
                        info->has_tls = true;
                        break;
                }
        }
}

static bool has_origin(const char *s, size_t max) {
        size_t l = strnlen(s, max);
        return memmem(s, l, "$ORIGIN", 7) || memmem(s, l, "${ORIGIN}", 9);
}

static size_t count_copy_relocs(const struct image *im, uint64_t rela, uint64_t relasz) {
        uint64_t off;
        size_t n = 0;
        if (relasz == 0 || vaddr_to_offset(im, rela, relasz, &off) < 0)
                return 0;
        const Elf64_Rela *r = at(im, off, relasz);
        if (!r)
                return 0;
        for (uint64_t i = 0; i < relasz / sizeof *r; i++)
                if (ELF64_R_TYPE(r[i].r_info) == HS_R_COPY)
                        n++;
        return n;
}

static int read_dynamic(const struct image *im, const Elf64_Phdr *dynp, struct elf_info *info) {
        const Elf64_Dyn *dyn = at(im, dynp->p_offset, dynp->p_filesz);
        if (!dyn)
                return -ENOEXEC;
        size_t n = dynp->p_filesz / sizeof *dyn;
        uint64_t strtab = 0, strsz = 0, rela = 0, relasz = 0;
        uint64_t path_offsets[8];
        size_t npaths = 0;

        for (size_t i = 0; i < n && dyn[i].d_tag != DT_NULL; i++) {
                switch (dyn[i].d_tag) {
                case DT_NEEDED:
                        info->needed++;
                        break;
                case DT_STRTAB:
                        strtab = dyn[i].d_un.d_ptr;
                        break;
                case DT_STRSZ:
                        strsz = dyn[i].d_un.d_val;
                        break;
                case DT_RELA:
                        rela = dyn[i].d_un.d_ptr;
                        break;
                case DT_RELASZ:
                        relasz = dyn[i].d_un.d_val;
                        break;
                case DT_PREINIT_ARRAY:
                        info->has_preinit = true;
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
        if (strtab && strsz && vaddr_to_offset(im, strtab, strsz, &stroff) == 0)
                for (size_t i = 0; i < npaths; i++) {
                        const char *s = at(im, stroff + path_offsets[i], 1);
                        if (s && path_offsets[i] < strsz && has_origin(s, strsz - path_offsets[i]))
                                info->origin_in_path = true;
                }
        info->copy_relocs = count_copy_relocs(im, rela, relasz);
        return 0;
}

/* Looks for a defined global `main` in .dynsym, found through the section headers (every
 * toolchain writes them; a stripped-of-sections file simply does not export main for us). */
static bool find_main(const struct image *im) {
        const Elf64_Ehdr *e = im->ehdr;
        if (e->e_shentsize != sizeof(Elf64_Shdr))
                return false;
        const Elf64_Shdr *sh = at(im, e->e_shoff, (uint64_t) e->e_shnum * sizeof(Elf64_Shdr));
        if (!sh)
                return false;
        for (unsigned i = 0; i < e->e_shnum; i++) {
                if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= e->e_shnum)
                        continue;
                const Elf64_Sym *sym = at(im, sh[i].sh_offset, sh[i].sh_size);
                const Elf64_Shdr *strs = &sh[sh[i].sh_link];
                const char *str = at(im, strs->sh_offset, strs->sh_size);
                if (!sym || !str)
                        return false;
                for (uint64_t k = 0; k < sh[i].sh_size / sizeof *sym; k++) {
                        if (sym[k].st_name >= strs->sh_size || sym[k].st_shndx == SHN_UNDEF)
                                continue;
                        if (ELF64_ST_BIND(sym[k].st_info) == STB_LOCAL || ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC)
                                continue;
                        if (strncmp(str + sym[k].st_name, "main", strs->sh_size - sym[k].st_name) == 0)
                                return true;
                }
        }
        return false;
}

static int parse(const struct image *im, struct elf_info *info) {
        const unsigned char *ident = im->data;
        if (im->size < EI_NIDENT || memcmp(ident, ELFMAG, SELFMAG) != 0)
                return 0;
        info->is_elf = true;
        if (ident[EI_CLASS] != ELFCLASS64)
                return 0;
        info->is_64bit = true;

        struct image m = *im;
        m.ehdr = at(im, 0, sizeof(Elf64_Ehdr));
        if (!m.ehdr)
                return -ENOEXEC;
        info->machine_matches = m.ehdr->e_machine == HS_ELF_MACHINE;
        info->is_dyn = m.ehdr->e_type == ET_DYN;
        if (m.ehdr->e_phentsize != sizeof(Elf64_Phdr))
                return -ENOEXEC;
        m.phdr = at(im, m.ehdr->e_phoff, (uint64_t) m.ehdr->e_phnum * sizeof(Elf64_Phdr));
        if (!m.phdr)
                return -ENOEXEC;

        const Elf64_Phdr *dyn = NULL;
        read_program_headers(&m, info, &dyn);
        if (dyn) {
                int r = read_dynamic(&m, dyn, info);
                if (r < 0)
                        return r;
        }
        info->exports_main = find_main(&m);
        return 0;
}

/* Reads the whole file rather than mapping it: a file truncated while we parse it would raise
 * SIGBUS through a mapping, and the daemon must survive anything a client hands it. */
static int read_all(int fd, size_t size, uint8_t **ret) {
        uint8_t *buf = malloc(size);
        if (!buf)
                return -ENOMEM;
        size_t got = 0;
        while (got < size) {
                ssize_t n = pread(fd, buf + got, size - got, (off_t) got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        free(buf);
                        return n < 0 ? -errno : -ENOEXEC;
                }
                got += (size_t) n;
        }
        *ret = buf;
        return 0;
}

int elf_info_read(int fd, struct elf_info *ret) {
        struct stat st;
        struct elf_info info = { 0 };

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EACCES;
        if (st.st_size < EI_NIDENT) {
                *ret = info;
                return 0;
        }
        if ((uint64_t) st.st_size > ELF_MAX_FILE)
                return -EFBIG;

        uint8_t *data = NULL;
        int r = read_all(fd, (size_t) st.st_size, &data);
        if (r < 0)
                return r;
        struct image im = { .data = data, .size = (size_t) st.st_size };
        r = parse(&im, &info);
        free(data);
        if (r < 0)
                return r;
        *ret = info;
        return 0;
}
