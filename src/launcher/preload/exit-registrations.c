/* SPDX-License-Identifier: MIT */
#include "exit-registrations.h"

#include <stdbool.h>
#include <string.h>

#include "loaded-relocs.h"
#include "macro.h"

/* The C library's and the C++ runtime's ways to have a function called at exit. A program built
 * with today's glibc has atexit and at_quick_exit linked in from libc_nonshared.a, which call the
 * __cxa_ ones through its own references; one built long ago references glibc's old atexit. */
static const char *const REGISTRATIONS[] = {
        "__cxa_atexit",        "atexit",
        "on_exit",             "__cxa_at_quick_exit",
        "at_quick_exit",       "__cxa_thread_atexit",
        "__cxa_thread_atexit_impl",
};

static unsigned counted;

/* Stands for every registration function: each returns 0 for success and takes at most three
 * arguments, which are ignored. Nothing is registered: the child ends once the count is read. */
static int count_registration(void *function, void *argument, void *object) {
        (void) function;
        (void) argument;
        (void) object;
        counted++;
        return 0;
}

struct redirect {
        uintptr_t relro_start, relro_end;
        int error;
};

static bool is_registration(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(REGISTRATIONS); i++)
                if (strcmp(name, REGISTRATIONS[i]) == 0)
                        return true;
        return false;
}

static int redirect_one(const struct loaded_reloc *r, void *userdata) {
        struct redirect *d = userdata;
        if (!r->name || !is_registration(r->name) || !loaded_reloc_is_address(r))
                return 0;
        int e = loaded_slot_write(r->slot, (uintptr_t) count_registration, d->relro_start, d->relro_end);
        if (e < 0)
                d->error = e;
        return 0;
}

int exit_registrations_count(const struct link_map *program) {
        struct redirect d = { 0 };
        loaded_relro_range(program, &d.relro_start, &d.relro_end);
        int r = loaded_relocs_walk(program, redirect_one, &d);
        return r < 0 ? r : d.error;
}

unsigned exit_registrations_counted(void) {
        return counted;
}

bool exit_registrations_destructors(const struct link_map *program) {
        for (const ElfW(Dyn) *d = program->l_ld; d->d_tag != DT_NULL; d++)
                if (d->d_tag == DT_FINI_ARRAYSZ && d->d_un.d_val > sizeof(ElfW(Addr)))
                        return true;
        return false;
}
