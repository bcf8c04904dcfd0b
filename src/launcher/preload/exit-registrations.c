/* SPDX-License-Identifier: MIT */
#include "exit-registrations.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loaded-relocs.h"
#include "macro.h"

/* glibc's own registration functions, which atexit and at_quick_exit (linked into programs from
 * libc_nonshared.a) call with the program's __dso_handle. */
extern int __cxa_atexit(void (*function)(void *), void *argument, void *object);
extern int __cxa_at_quick_exit(void (*function)(void), void *object);

static struct exit_registrations *recording;

static int record(enum exit_registration_kind kind, void *function, void *argument, void *object) {
        struct exit_registrations *r = recording;
        if (r->n == r->allocated) {
                size_t allocated = r->allocated ? 2 * r->allocated : 16;
                struct exit_registration *items = realloc(r->items, allocated * sizeof *items);
                if (!items) {
                        r->error = -ENOMEM;
                        return -1;
                }
                r->items = items;
                r->allocated = allocated;
        }
        r->items[r->n++] = (struct exit_registration){ kind, function, argument, object };
        return 0;
}

static int record_cxa_atexit(void *function, void *argument, void *object) {
        return record(EXIT_AT_EXIT, function, argument, object);
}

/* A program built long ago references glibc's old atexit, which registers with no object. */
static int record_atexit(void *function) {
        return record(EXIT_AT_EXIT, function, NULL, NULL);
}

static int record_on_exit(void *function, void *argument) {
        return record(EXIT_ON_EXIT, function, argument, NULL);
}

static int record_cxa_at_quick_exit(void *function, void *object) {
        return record(EXIT_AT_QUICK_EXIT, function, NULL, object);
}

static int record_at_quick_exit(void *function) {
        return record(EXIT_AT_QUICK_EXIT, function, NULL, NULL);
}

/* Registers nothing: the daemon's thread is not the program's. The program is then not warm. */
static int drop_thread_atexit(void *function, void *argument, void *object) {
        (void) function;
        (void) argument;
        (void) object;
        recording->unrepeatable++;
        return 0;
}

/* Registers nothing: fork handlers registered in the daemon would run at each of its forks, in the
 * daemon and in every child, whatever program it runs. The program is then not warm. */
static int drop_atfork(void *prepare, void *parent, void *child, void *object) {
        (void) prepare;
        (void) parent;
        (void) child;
        (void) object;
        recording->atfork++;
        return 0;
}

static const struct {
        const char *name;
        uintptr_t recorder;
} REGISTRATIONS[] = {
        { "__cxa_atexit", (uintptr_t) record_cxa_atexit },
        { "atexit", (uintptr_t) record_atexit },
        { "on_exit", (uintptr_t) record_on_exit },
        { "__cxa_at_quick_exit", (uintptr_t) record_cxa_at_quick_exit },
        { "at_quick_exit", (uintptr_t) record_at_quick_exit },
        { "__cxa_thread_atexit", (uintptr_t) drop_thread_atexit },
        { "__cxa_thread_atexit_impl", (uintptr_t) drop_thread_atexit },
        { "__register_atfork", (uintptr_t) drop_atfork },
        { "pthread_atfork", (uintptr_t) drop_atfork },
};

/* The slots pointed at a recorder, with what the loader had written there. A program references
 * each function through one or two slots (its PLT's and a GOT entry). */
#define MAX_REDIRECTED 32
static struct {
        uintptr_t *slot, value;
} redirected[MAX_REDIRECTED];
static size_t nredirected;

struct redirect {
        uintptr_t relro_start, relro_end;
        int error;
};

static uintptr_t recorder_for(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(REGISTRATIONS); i++)
                if (strcmp(name, REGISTRATIONS[i].name) == 0)
                        return REGISTRATIONS[i].recorder;
        return 0;
}

static int redirect_one(const struct loaded_reloc *r, void *userdata) {
        struct redirect *d = userdata;
        uintptr_t recorder = r->name ? recorder_for(r->name) : 0;
        if (!recorder || !loaded_reloc_is_address(r))
                return 0;
        if (nredirected == MAX_REDIRECTED)
                return d->error = -E2BIG;
        redirected[nredirected].slot = r->slot;
        redirected[nredirected].value = *r->slot;
        int e = loaded_slot_write(r->slot, recorder, d->relro_start, d->relro_end);
        if (e < 0)
                return d->error = e;
        nredirected++;
        return 0;
}

int exit_registrations_record(const struct link_map *program, struct exit_registrations *into) {
        struct redirect d = { 0 };
        recording = into;
        nredirected = 0;
        loaded_relro_range(program, &d.relro_start, &d.relro_end);
        int r = loaded_relocs_walk(program, redirect_one, &d);
        if (r >= 0 && d.error >= 0)
                return 0;
        (void) exit_registrations_stop(program);
        return r < 0 ? r : d.error;
}

int exit_registrations_stop(const struct link_map *program) {
        uintptr_t relro_start, relro_end;
        loaded_relro_range(program, &relro_start, &relro_end);
        int error = 0;
        for (size_t i = 0; i < nredirected; i++) {
                int e = loaded_slot_write(redirected[i].slot, redirected[i].value, relro_start, relro_end);
                if (e < 0)
                        error = e;
        }
        nredirected = 0;
        recording = NULL;
        return error;
}

void exit_registrations_replay(const struct exit_registrations *r) {
        for (size_t i = 0; r && i < r->n; i++) {
                const struct exit_registration *e = &r->items[i];
                switch (e->kind) {
                case EXIT_AT_EXIT:
                        (void) __cxa_atexit((void (*)(void *)) e->function, e->argument, e->object);
                        break;
                case EXIT_ON_EXIT:
                        (void) on_exit((void (*)(int, void *)) e->function, e->argument);
                        break;
                case EXIT_AT_QUICK_EXIT:
                        (void) __cxa_at_quick_exit((void (*)(void)) e->function, e->object);
                        break;
                }
        }
}

void exit_registrations_done(struct exit_registrations *r) {
        free(r->items);
        *r = (struct exit_registrations){ 0 };
}

bool exit_registrations_destructors(const struct link_map *program) {
        for (const ElfW(Dyn) *d = program->l_ld; d->d_tag != DT_NULL; d++)
                if (d->d_tag == DT_FINI_ARRAYSZ && d->d_un.d_val > sizeof(ElfW(Addr)))
                        return true;
        return false;
}
