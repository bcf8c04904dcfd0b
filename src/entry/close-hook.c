/* SPDX-License-Identifier: MIT */
#include "close-hook.h"

#include <dlfcn.h>
#include <stdlib.h>

#include "arch.h"

static void (*before_close)(void);

void hs_entry_before_dlclose(void (*before)(void)) {
        __atomic_store_n(&before_close, before, __ATOMIC_RELEASE);
}

static int close_object(const char *version, void *handle) {
        void (*before)(void) = __atomic_load_n(&before_close, __ATOMIC_ACQUIRE);
        if (before)
                before();
        int (*real)(void *) = (int (*)(void *)) dlvsym(RTLD_NEXT, "dlclose", version);
        if (!real)
                abort();
        return real(handle);
}

/* One definition per symbol version, as for __libc_start_main (entry.c). */
int hs_dlclose_first(void *handle);
int hs_dlclose_2_34(void *handle);

int hs_dlclose_first(void *handle) {
        return close_object(HS_GLIBC_FIRST_VERSION, handle);
}

int hs_dlclose_2_34(void *handle) {
        return close_object("GLIBC_2.34", handle);
}

__asm__(".symver hs_dlclose_first, dlclose@" HS_GLIBC_FIRST_VERSION);
__asm__(".symver hs_dlclose_2_34, dlclose@@GLIBC_2.34");
