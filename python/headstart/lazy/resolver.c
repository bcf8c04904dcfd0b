/* SPDX-License-Identifier: MIT */
/* The resolver of a lazy-loading stub archive (`headstart lazy build`, docs/lazy.md).
 *
 * The generated stubs (stubs-ARCH.S) jump through one slot per function; each slot first points to
 * a thunk that calls hs_lazy_resolve with the function's index. The first call of any of them loads
 * the real library (once, whichever threads race to it: by its soname when the stubs are linked
 * into the program, by its full path from a drop-in, which has the soname itself), finds the
 * function by its name and version, stores its address in the slot and returns it; the thunk
 * jumps there with the arguments intact. A library or symbol that cannot be found ends the program with one clear line (the call
 * has nowhere to go), never silently. Compiled with the generated table (HS_LAZY_TABLE), whose
 * HS_LAZY(x) prefixes every name with the library's, so that several stub archives link together. */
#define _GNU_SOURCE /* dlvsym */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* hs_lazy_soname, hs_lazy_target, hs_lazy_names[], hs_lazy_versions[], and HS_LAZY(slots)[]: the
 * generated table. */
#include HS_LAZY_TABLE

static void *library;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[512];
/* Which thread loads the library, while it does: a stub called from the library's constructors lands
 * here again, where pthread_once would wait for itself forever. (Not thread-local storage, which
 * would give a program linked with the stubs a PT_TLS of its own.) */
static pthread_t loader;
static atomic_bool loading;

static bool loading_here(void) {
        return atomic_load_explicit(&loading, memory_order_acquire) && pthread_equal(loader, pthread_self());
}

static void load(void) {
        loader = pthread_self();
        atomic_store_explicit(&loading, true, memory_order_release);
        library = dlopen(hs_lazy_target, RTLD_NOW | RTLD_GLOBAL);
        atomic_store_explicit(&loading, false, memory_order_release);
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
        if (loading_here())
                fail("call", hs_lazy_names[index], "called while its library loads, by its constructors");
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
