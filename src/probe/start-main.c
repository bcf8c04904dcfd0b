/* SPDX-License-Identifier: MIT */
#include "start-main.h"

#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch.h"
#include "loaded-relocs.h"

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

static start_main_fn real_start_main;
static main_fn real_main;
static main_entered_fn on_entry;

static int wrapped_main(int argc, char **argv, char **envp) {
        if (on_entry)
                on_entry();
        return real_main(argc, argv, envp);
}

/* Runs on the program's stack, in the program's namespace, exactly where its _start called. */
static int wrapped_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                              void (*rtld_fini)(void), void *stack_end) {
        real_main = main;
        return real_start_main(wrapped_main, argc, argv, init, fini, rtld_fini, stack_end);
}

void start_main_on_entry(main_entered_fn fn) {
        on_entry = fn;
}

uintptr_t start_main_redirect(uintptr_t real) {
        real_start_main = (start_main_fn) real;
        return (uintptr_t) wrapped_start_main;
}

bool start_main_caught(void) {
        return real_start_main != NULL;
}

static int find_slot(const struct loaded_reloc *r, void *userdata) {
        if ((r->type != HS_R_GLOB_DAT && r->type != HS_R_ABS) || strcmp(r->name, "__libc_start_main") != 0)
                return 0;
        *(uintptr_t **) userdata = r->slot;
        return 1;
}

/* The program's PT_GNU_RELRO pages, which the loader has made read-only by now. Read from the
 * program headers the kernel passed, not through loaded_relro_range(): dl_iterate_phdr cannot be
 * called from an audit callback while the loader is still starting the program (it crashes). */
static void relro_pages(const struct link_map *program, uintptr_t *start, uintptr_t *end) {
        const ElfW(Phdr) *phdr = (const ElfW(Phdr) *) getauxval(AT_PHDR);
        size_t phnum = getauxval(AT_PHNUM);
        uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
        *start = *end = 0;
        for (size_t i = 0; phdr && i < phnum; i++)
                if (phdr[i].p_type == PT_GNU_RELRO) {
                        *start = (program->l_addr + phdr[i].p_vaddr) & ~(page - 1);
                        *end = (program->l_addr + phdr[i].p_vaddr + phdr[i].p_memsz) & ~(page - 1);
                }
}

bool start_main_patch(const struct link_map *program) {
        if (real_start_main)
                return true;
        uintptr_t *slot = NULL;
        if (loaded_relocs_walk(program, find_slot, &slot) == 0 || !slot || !*slot)
                return false;
        uintptr_t start, end, page = (uintptr_t) sysconf(_SC_PAGESIZE);
        relro_pages(program, &start, &end);
        bool protected = (uintptr_t) slot >= start && (uintptr_t) slot < end;
        void *slot_page = (void *) ((uintptr_t) slot & ~(page - 1));
        if (protected && mprotect(slot_page, page, PROT_READ | PROT_WRITE) != 0)
                return false;
        *slot = start_main_redirect(*slot);
        if (protected)
                mprotect(slot_page, page, PROT_READ);
        return true;
}
