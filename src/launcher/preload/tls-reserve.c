/* SPDX-License-Identifier: MIT */
#include "tls-reserve.h"

#include <errno.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
/* The reserve itself. In .tdata (a non-zero initial value), so that the loader's initial image of
 * it is memory of ours that tls_reserve_fill can rewrite: every byte of a new thread's block then
 * comes from that image (for .tbss glibc would write zeros). `used`: nothing of the daemon reads it. */
__attribute__((used, aligned(TLS_RESERVE_ALIGN))) static _Thread_local unsigned char reserve[TLS_RESERVE_SIZE] = {
        1
};

static uintptr_t thread_pointer(void) {
        uintptr_t tp;
        __asm__("mov %%fs:0, %0" : "=r"(tp)); /* the TCB's pointer to itself, tcbhead_t.tcb */
        return tp;
}
#endif

struct reserve_state {
        bool checked;
        const char *problem;
        unsigned char *image;             /* the initial image glibc copies new threads' blocks from */
        uintptr_t relro_start, relro_end; /* the pages of the executable the loader made read-only */
};

static struct reserve_state state;

#if defined(__x86_64__)
struct found {
        const ElfW(Phdr) *tls, *relro, *load;
        unsigned ntls;
        uintptr_t base;
};

/* The first object dl_iterate_phdr reports is the main program: the daemon's executable. */
static int find_own(struct dl_phdr_info *info, size_t size, void *data) {
        (void) size;
        struct found *f = data;
        f->base = info->dlpi_addr;
        for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *p = &info->dlpi_phdr[i];
                if (p->p_type == PT_TLS) {
                        f->tls = p;
                        f->ntls++;
                } else if (p->p_type == PT_GNU_RELRO)
                        f->relro = p;
        }
        for (ElfW(Half) i = 0; f->tls && i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *p = &info->dlpi_phdr[i];
                if (p->p_type == PT_LOAD && (p->p_flags & PF_W) && f->tls->p_vaddr >= p->p_vaddr &&
                    f->tls->p_vaddr + f->tls->p_filesz <= p->p_vaddr + p->p_filesz)
                        f->load = p;
        }
        return 1;
}

#endif

static const char *check(void) {
#if !defined(__x86_64__)
        /* aarch64 is TLS variant I: the blocks follow the thread pointer, the executable's at
         * roundup(16, its alignment) (the TCB's 16 bytes first), so where a program's block starts
         * depends on its own alignment and a reserve would have to begin at TP + 16 and cover every
         * such start. Not built nor tested here: such programs stay exec (docs/limitations.md). */
        return "the daemon gives an executable's TLS block its place only on x86-64";
#else
        struct found f = { 0 };
        dl_iterate_phdr(find_own, &f);
        if (f.ntls != 1 || f.tls->p_memsz != TLS_RESERVE_SIZE || f.tls->p_filesz != TLS_RESERVE_SIZE)
                return "the daemon's own TLS reserve is not its executable's whole TLS block";
        if (thread_pointer() - (uintptr_t) reserve != TLS_RESERVE_SIZE)
                return "the daemon's own TLS reserve is not right below the thread pointer";
        unsigned char *image = (unsigned char *) (f.base + f.tls->p_vaddr);
        if (!f.load || image[0] != 1)
                return "the daemon's own TLS reserve has no initial image in writable memory";
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        state.image = image;
        /* As glibc 2.36's _dl_protect_relro rounds them: both ends down to a page. */
        if (f.relro) {
                state.relro_start = (f.base + f.relro->p_vaddr) & ~(page - 1);
                state.relro_end = (f.base + f.relro->p_vaddr + f.relro->p_memsz) & ~(page - 1);
        }
        return NULL;
#endif
}

const char *tls_reserve_problem(void) {
        if (!state.checked) {
                state.problem = check();
                state.checked = true;
        }
        return state.problem;
}

uint64_t tls_block_offset(const struct elf_info *e) {
        uint64_t align = e->tls_align;
        if (e->tls_memsz == 0 || align == 0 || (align & (align - 1)) != 0 || e->tls_filesz > e->tls_memsz)
                return 0;
        /* glibc's formula for the first module, in the same unsigned arithmetic. */
        uint64_t firstbyte = (-(e->tls_vaddr & (align - 1))) & (align - 1);
        uint64_t off = (e->tls_memsz - firstbyte + align - 1) / align * align + firstbyte;
        return off >= e->tls_memsz ? off : 0;
}

const char *tls_reserve_verdict(const struct elf_info *e, char *buf, size_t size) {
        /* An empty PT_TLS gives no module (glibc skips it): nothing to place. */
        if (e->tls_memsz == 0)
                return NULL;
        const char *problem = tls_reserve_problem();
        uint64_t off = tls_block_offset(e);
        if (problem)
                snprintf(buf, size, "has thread-local storage in the executable (PT_TLS), and %s", problem);
        else if (off == 0)
                snprintf(buf, size, "has thread-local storage in the executable (PT_TLS) whose size or alignment "
                                    "is malformed");
        else if (e->tls_align > TLS_RESERVE_ALIGN || off > TLS_RESERVE_SIZE)
                /* What is particular to the program after the colon (headstart check counts by what
                 * comes before). */
                snprintf(buf, size,
                         "has thread-local storage in the executable (PT_TLS) that does not fit where exec puts it "
                         "in the daemon's reserve of %d bytes aligned %d: %llu bytes aligned %llu, %llu below the "
                         "thread pointer",
                         TLS_RESERVE_SIZE, TLS_RESERVE_ALIGN, (unsigned long long) e->tls_memsz,
                         (unsigned long long) e->tls_align, (unsigned long long) off);
        else if (e->tls_exported)
                snprintf(buf, size, "has thread-local storage in the executable (PT_TLS) and exports thread-local "
                                    "variables (or its symbol table cannot be read), which objects it loads would find "
                                    "in another block than its own code");
        else if (e->tls_self_relocated)
                snprintf(buf, size, "has thread-local storage in the executable (PT_TLS) that its own dynamic TLS "
                                    "relocations refer to, which the loader resolves to another block when dlopened");
        else if (e->tls_image_relocated)
                snprintf(buf, size, "has thread-local storage in the executable (PT_TLS) whose initial values the "
                                    "loader relocates (they hold addresses)");
        else
                return NULL;
        return buf;
}

int tls_reserve_fill(const unsigned char *image) {
        if (tls_reserve_problem())
                return -ENOTSUP;
#if defined(__x86_64__)
        memcpy(reserve, image, TLS_RESERVE_SIZE);
        /* The image sits in RELRO (.tdata comes first there): writable for the copy, then read-only
         * again exactly where the loader had made it so. */
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        uintptr_t start = (uintptr_t) state.image & ~(page - 1);
        uintptr_t end = ((uintptr_t) state.image + TLS_RESERVE_SIZE + page - 1) & ~(page - 1);
        if (mprotect((void *) start, end - start, PROT_READ | PROT_WRITE) < 0)
                return -errno;
        memcpy(state.image, image, TLS_RESERVE_SIZE);
        uintptr_t lo = start > state.relro_start ? start : state.relro_start;
        uintptr_t hi = end < state.relro_end ? end : state.relro_end;
        if (lo < hi && mprotect((void *) lo, hi - lo, PROT_READ) < 0)
                return -errno;
#else
        (void) image;
#endif
        return 0;
}
