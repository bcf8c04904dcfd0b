/* SPDX-License-Identifier: MIT */
/* The resolver of a lazy-loading stub archive (`headstart lazy build`, docs/lazy.md).
 *
 * The generated stubs (stubs-ARCH.S) jump through one slot per function; each slot first points to
 * a thunk that calls hs_lazy_resolve with the function's index. The first call of any of them loads
 * the real library (once, whichever threads race to it), finds the function by its name and
 * version, stores its address in the slot and returns it; the thunk jumps there with the arguments
 * intact. A library or symbol that cannot be found ends the program with one clear line (the call
 * has nowhere to go), never silently. Compiled with the generated table (HS_LAZY_TABLE), whose
 * HS_LAZY(x) prefixes every name with the library's, so that several stub archives link together. */
#define _GNU_SOURCE /* dlvsym */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* hs_lazy_soname, hs_lazy_names[], hs_lazy_versions[], and HS_LAZY(slots)[]: the generated table. */
#include HS_LAZY_TABLE

static void *library;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[512];

static void load(void) {
        library = dlopen(hs_lazy_soname, RTLD_NOW | RTLD_GLOBAL);
        if (!library)
                snprintf(load_error, sizeof load_error, "%s", dlerror());
}

/* One line, whichever threads fail at once: the first says why and ends the program, the others
 * wait for the end rather than run on with nowhere to call. */
static void fail(const char *what, const char *name, const char *why) {
        static atomic_flag told = ATOMIC_FLAG_INIT;
        if (atomic_flag_test_and_set(&told))
                for (;;)
                        pause();
        fprintf(stderr, "headstart lazy: cannot %s %s (deferred until its first call): %s\n", what, name,
                why && *why ? why : "not found");
        abort();
}

__attribute__((visibility("hidden"))) void *HS_LAZY(resolve)(unsigned long index) {
        pthread_once(&once, load);
        if (!library)
                fail("load", hs_lazy_soname, load_error);
        const char *version = hs_lazy_versions[index];
        void *address = version ? dlvsym(library, hs_lazy_names[index], version)
                                : dlsym(library, hs_lazy_names[index]);
        if (!address)
                fail("find", hs_lazy_names[index], dlerror());
        __atomic_store_n(&HS_LAZY(slots)[index], address, __ATOMIC_RELEASE);
        return address;
}
