/* SPDX-License-Identifier: MIT */
#include "entry.h"

#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "arch.h"

typedef int (*start_main_fn)(hs_main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                             void (*rtld_fini)(void), void *stack_end);

/* The auxiliary vector the kernel put on this process's stack, which getauxval() reads. */
static ElfW(auxv_t) *process_auxv;
/* Set only while a program's _start runs for hs_entry_find_main. */
static jmp_buf *capture;
static hs_main_fn captured;

static void remember_auxv(int argc, char **argv) {
        char **p = argv + argc + 1; /* the environment */
        while (*p)
                p++;
        process_auxv = (ElfW(auxv_t) *) (p + 1);
}

static int start_main(const char *version, hs_main_fn main, int argc, char **argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
        if (capture) {
                captured = main;
                longjmp(*capture, 1);
        }
        if (!process_auxv)
                remember_auxv(argc, argv);
        start_main_fn real = (start_main_fn) dlvsym(RTLD_NEXT, "__libc_start_main", version);
        if (!real)
                abort();
        return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}

/* One definition per symbol version; the version script and .symver bind each to its name. */
int hs_start_main_first(hs_main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                        void (*rtld_fini)(void), void *stack_end);
int hs_start_main_2_34(hs_main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                       void (*rtld_fini)(void), void *stack_end);

int hs_start_main_first(hs_main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                        void (*rtld_fini)(void), void *stack_end) {
        return start_main(HS_GLIBC_FIRST_VERSION, main, argc, argv, init, fini, rtld_fini, stack_end);
}

int hs_start_main_2_34(hs_main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                       void (*rtld_fini)(void), void *stack_end) {
        return start_main("GLIBC_2.34", main, argc, argv, init, fini, rtld_fini, stack_end);
}

__asm__(".symver hs_start_main_first, __libc_start_main@" HS_GLIBC_FIRST_VERSION);
__asm__(".symver hs_start_main_2_34, __libc_start_main@@GLIBC_2.34");

int hs_entry_adopt_auxv(const struct hs_program_image *image) {
        if (!process_auxv)
                return -ENOENT;
        for (ElfW(auxv_t) *a = process_auxv; a->a_type != AT_NULL; a++)
                switch (a->a_type) {
                case AT_ENTRY:
                        a->a_un.a_val = image->entry;
                        break;
                case AT_PHDR:
                        a->a_un.a_val = (uintptr_t) image->phdr;
                        break;
                case AT_PHNUM:
                        a->a_un.a_val = image->phnum;
                        break;
                case AT_EXECFN:
                        a->a_un.a_val = (uintptr_t) image->execfn;
                        break;
                case AT_RANDOM:
                        /* Each exec gets new bytes; the stack guard was already taken from the old ones. */
                        (void) !getrandom((void *) a->a_un.a_val, 16, GRND_NONBLOCK);
                        break;
                }
        return 0;
}

static size_t count_strings(char **v) {
        size_t n = 0;
        while (v[n])
                n++;
        return n;
}

/* _start of a dynamically linked program reads only argc and argv; the environment is laid out too
 * for fidelity, unless it is so large that copying it risks the stack. */
#define MAX_ENV_ON_ENTRY_STACK 16384u

hs_main_fn hs_entry_find_main(const struct hs_program_image *image, int argc, char **argv, char **envp) {
        if (!process_auxv)
                return NULL;
        size_t nenv = count_strings(envp), naux = 1;
        if (nenv > MAX_ENV_ON_ENTRY_STACK)
                nenv = 0;
        while (process_auxv[naux - 1].a_type != AT_NULL)
                naux++;

        /* Laid out as the kernel does: argc, argv, NULL, envp, NULL, auxv. The stack of the code that
         * runs from here grows down from it, below our own frame, so it stays the normal stack. */
        size_t words = 1 + (size_t) argc + 1 + nenv + 1 + 2 * naux;
        uintptr_t area[words + 2];
        uintptr_t *sp = (uintptr_t *) (((uintptr_t) area + 15) & ~(uintptr_t) 15);
        uintptr_t *w = sp;
        *w++ = (uintptr_t) argc;
        memcpy(w, argv, ((size_t) argc + 1) * sizeof *w);
        w += argc + 1;
        memcpy(w, envp, nenv * sizeof *w);
        w += nenv;
        *w++ = 0;
        memcpy(w, process_auxv, naux * sizeof(ElfW(auxv_t)));

        jmp_buf back;
        captured = NULL;
        if (setjmp(back) == 0) {
                capture = &back;
                HS_JUMP_TO_ENTRY(image->entry, sp);
                __builtin_unreachable();
        }
        capture = NULL;
        return captured;
}
