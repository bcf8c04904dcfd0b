/* SPDX-License-Identifier: MIT */
/* libheadstart-mark-main.so: marks main of a program that cannot mark it itself (an unmodified
 * one), for the launch benchmarks. Preloaded (LD_PRELOAD) into the exec'd program and into the
 * daemon alike, it binds every __libc_start_main ahead of the others, hands the next one a main of
 * its own that writes the time (bench/apps/mark.h) and then calls the program's main. Through the
 * daemon the next one is libheadstart-entry.so's, which captures that main as it would the real one. */
#include <dlfcn.h>
#include <stdlib.h>

#include "../apps/mark.h"
#include "arch.h"

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                             void (*rtld_fini)(void), void *stack_end);

static main_fn program_main;

static int marked_main(int argc, char **argv, char **envp) {
        headstart_mark_main();
        /* Marked once: a sample that marks main itself finds nothing left to mark. */
        unsetenv("HEADSTART_MARK_FD");
        return program_main(argc, argv, envp);
}

static int start_main(const char *version, main_fn main, int argc, char **argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
        start_main_fn next = (start_main_fn) dlvsym(RTLD_NEXT, "__libc_start_main", version);
        if (!next)
                abort();
        program_main = main;
        return next(marked_main, argc, argv, init, fini, rtld_fini, stack_end);
}

int mark_start_main_first(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                          void (*rtld_fini)(void), void *stack_end);
int mark_start_main_2_34(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                         void (*rtld_fini)(void), void *stack_end);

int mark_start_main_first(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                          void (*rtld_fini)(void), void *stack_end) {
        return start_main(HS_GLIBC_FIRST_VERSION, main, argc, argv, init, fini, rtld_fini, stack_end);
}

int mark_start_main_2_34(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                         void (*rtld_fini)(void), void *stack_end) {
        return start_main("GLIBC_2.34", main, argc, argv, init, fini, rtld_fini, stack_end);
}

__asm__(".symver mark_start_main_first, __libc_start_main@" HS_GLIBC_FIRST_VERSION);
__asm__(".symver mark_start_main_2_34, __libc_start_main@@GLIBC_2.34");
