/* SPDX-License-Identifier: MIT */
#include "env-reads.h"

#include <dlfcn.h>
#include <stdlib.h>

#include "arch.h"

typedef char *(*getenv_fn)(const char *);

static void (*on_getenv)(const char *, const void *);

void hs_entry_on_getenv(void (*on_read)(const char *name, const void *caller)) {
        __atomic_store_n(&on_getenv, on_read, __ATOMIC_RELEASE);
}

/* The C library's function of that name and version, looked up once. */
static char *read_variable(const char *symbol, const char *version, getenv_fn *real, const char *name,
                           const void *caller) {
        void (*hook)(const char *, const void *) = __atomic_load_n(&on_getenv, __ATOMIC_ACQUIRE);
        if (hook && name)
                hook(name, caller);
        getenv_fn fn = __atomic_load_n(real, __ATOMIC_ACQUIRE);
        if (!fn) {
                fn = (getenv_fn) dlvsym(RTLD_NEXT, symbol, version);
                if (!fn)
                        abort();
                __atomic_store_n(real, fn, __ATOMIC_RELEASE);
        }
        return fn(name);
}

char *hs_getenv(const char *name);
char *hs_secure_getenv(const char *name);

char *hs_getenv(const char *name) {
        static getenv_fn real;
        return read_variable("getenv", HS_GLIBC_FIRST_VERSION, &real, name, __builtin_return_address(0));
}

/* glibc 2.17 gave it its name on every architecture we support. */
char *hs_secure_getenv(const char *name) {
        static getenv_fn real;
        return read_variable("secure_getenv", "GLIBC_2.17", &real, name, __builtin_return_address(0));
}

__asm__(".symver hs_getenv, getenv@@" HS_GLIBC_FIRST_VERSION);
__asm__(".symver hs_secure_getenv, secure_getenv@@GLIBC_2.17");
