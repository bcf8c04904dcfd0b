/* SPDX-License-Identifier: MIT */
/* libheadstart-order: the runtime of an instrumented build for `headstart order record`.
 *
 * A program compiled with -finstrument-functions (GCC, clang) calls __cyg_profile_func_enter at the
 * entry of every function; with clang's -finstrument-function-entry-bare it calls
 * __cyg_profile_func_enter_bare. Linked with this library (-lheadstart-order), each function is
 * written down the first time it runs, in that order, into the file named by
 * $HEADSTART_ORDER_OUTPUT (nothing is recorded without it). The file is mapped shared and written as
 * the program runs, with no system call per function, so that it can be read at any moment: at the
 * program's exit, or at ready while it still runs (a window shown). Its layout (order-file.h) holds
 * each function as an object and an offset into it; the host maps offsets to names. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "order-file.h"

#define NO_TRACE __attribute__((no_instrument_function))
#define EXPORTED __attribute__((no_instrument_function, visibility("default")))
#define SEEN_SLOTS (1u << 20) /* distinct functions at most; a power of two */

static struct order_file *out;        /* NULL until set up, or when recording is off */
static uintptr_t *seen;               /* open addressing over function addresses, 0 = empty */
static atomic_flag busy = ATOMIC_FLAG_INIT;
static atomic_int state;              /* 0: not set up, 1: recording, 2: off */

static NO_TRACE void setup(void) {
        const char *path = getenv(ORDER_OUTPUT_ENV);
        int fd = path ? open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
        if (fd < 0 || ftruncate(fd, (off_t) sizeof *out) < 0) {
                if (fd >= 0)
                        close(fd);
                atomic_store(&state, 2);
                return;
        }
        void *map = mmap(NULL, sizeof *out, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        void *table = mmap(NULL, SEEN_SLOTS * sizeof *seen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        close(fd);
        if (map == MAP_FAILED || table == MAP_FAILED) {
                atomic_store(&state, 2);
                return;
        }
        out = map;
        seen = table;
        memcpy(out->magic, ORDER_MAGIC, sizeof out->magic);
        out->version = ORDER_VERSION;
        atomic_store(&state, 1);
}

/* Whether fn is new (then remembered). */
static NO_TRACE bool first_time(uintptr_t fn) {
        for (uint32_t i = (uint32_t) ((fn >> 4) * 2654435761u) & (SEEN_SLOTS - 1);; i = (i + 1) & (SEEN_SLOTS - 1)) {
                if (seen[i] == fn)
                        return false;
                if (seen[i] == 0) {
                        seen[i] = fn;
                        return true;
                }
        }
}

static NO_TRACE uint32_t object_id(const Dl_info *info) {
        for (uint32_t i = 0; i < out->nobjects; i++)
                if (out->objects[i].base == (uint64_t) (uintptr_t) info->dli_fbase)
                        return i;
        if (out->nobjects == ORDER_MAX_OBJECTS)
                return ORDER_NO_OBJECT;
        uint32_t n = out->nobjects;
        struct order_object *o = &out->objects[n];
        o->base = (uint64_t) (uintptr_t) info->dli_fbase;
        strncpy(o->path, info->dli_fname ? info->dli_fname : "", sizeof o->path - 1);
        __atomic_store_n(&out->nobjects, n + 1, __ATOMIC_RELEASE);
        return n;
}

static NO_TRACE void record(uintptr_t fn) {
        int s = atomic_load(&state);
        if (s == 2)
                return;
        while (atomic_flag_test_and_set_explicit(&busy, memory_order_acquire))
                ; /* another thread records; this is brief */
        if (atomic_load(&state) == 0)
                setup();
        Dl_info info;
        if (atomic_load(&state) == 1 && first_time(fn) && out->nfunctions < ORDER_MAX_FUNCTIONS &&
            dladdr((void *) fn, &info) && info.dli_fbase) {
                uint32_t id = object_id(&info), n = out->nfunctions;
                if (id != ORDER_NO_OBJECT) {
                        out->functions[n] = (struct order_function){ .object = id,
                                                                     .offset = fn - (uintptr_t) info.dli_fbase };
                        /* A reader may look at any moment: the entry is whole before it counts. */
                        __atomic_store_n(&out->nfunctions, n + 1, __ATOMIC_RELEASE);
                }
        }
        atomic_flag_clear_explicit(&busy, memory_order_release);
}

EXPORTED void __cyg_profile_func_enter(void *fn, void *caller) {
        (void) caller;
        record((uintptr_t) fn);
}

EXPORTED void __cyg_profile_func_exit(void *fn, void *caller) {
        (void) fn;
        (void) caller;
}

/* clang -finstrument-function-entry-bare: no arguments; the return address lies inside the
 * function that was entered, which the host finds by its symbol's extent. */
EXPORTED void __cyg_profile_func_enter_bare(void) {
        record((uintptr_t) __builtin_return_address(0));
}
