/* SPDX-License-Identifier: MIT */
#include "close-hook.h"

#include <dlfcn.h>
#include <stdlib.h>

#include "arch.h"

static void (*before_close)(void);

void hs_entry_before_dlclose(void (*before)(void)) {
        __atomic_store_n(&before_close, before, __ATOMIC_RELEASE);
}

typedef int (*close_fn)(void *);

/* The C library's dlclose of that version, looked up once (a plugin host closes hundreds). */
static int close_object(const char *version, close_fn *real, void *handle) {
        void (*before)(void) = __atomic_load_n(&before_close, __ATOMIC_ACQUIRE);
        if (before)
                before();
        close_fn fn = __atomic_load_n(real, __ATOMIC_ACQUIRE);
        if (!fn) {
                fn = (close_fn) dlvsym(RTLD_NEXT, "dlclose", version);
                if (!fn)
                        abort();
                __atomic_store_n(real, fn, __ATOMIC_RELEASE);
        }
        return fn(handle);
}

/* One definition per symbol version, as for __libc_start_main (entry.c). */
int hs_dlclose_first(void *handle);
int hs_dlclose_2_34(void *handle);

int hs_dlclose_first(void *handle) {
        static close_fn real;
        return close_object(HS_GLIBC_FIRST_VERSION, &real, handle);
}

int hs_dlclose_2_34(void *handle) {
        static close_fn real;
        return close_object("GLIBC_2.34", &real, handle);
}

__asm__(".symver hs_dlclose_first, dlclose@" HS_GLIBC_FIRST_VERSION);
__asm__(".symver hs_dlclose_2_34, dlclose@@GLIBC_2.34");
