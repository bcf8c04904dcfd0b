/* SPDX-License-Identifier: MIT */
#include "read-at-load.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env-reads.h"

/* Filled by the hook, which may run inside any library's code (an allocator's own start among
 * them): no allocation there, and a lock of its own for a library's thread. */
static struct read_at_load noted[READ_AT_LOAD_MAX];
static size_t nnoted;
static bool noted_overflow;
static int noted_lock;
static const void *own_base; /* the daemon's executable: its own reads are not a library's */

static void note(const char *name, const void *caller) {
        Dl_info info;
        if (!dladdr(caller, &info) || info.dli_fbase == own_base)
                return;
        const char *file = info.dli_fname ? basename(info.dli_fname) : "";
        while (__atomic_test_and_set(&noted_lock, __ATOMIC_ACQUIRE))
                ;
        bool known = false;
        for (size_t i = 0; i < nnoted && !known; i++)
                known = strcmp(noted[i].name, name) == 0;
        if (!known && (nnoted == READ_AT_LOAD_MAX || strlen(name) >= READ_AT_LOAD_NAME_MAX))
                noted_overflow = true;
        else if (!known) {
                snprintf(noted[nnoted].name, READ_AT_LOAD_NAME_MAX, "%s", name);
                snprintf(noted[nnoted].reader, READ_AT_LOAD_NAME_MAX, "%s", file);
                nnoted++;
        }
        __atomic_clear(&noted_lock, __ATOMIC_RELEASE);
}

void read_at_load_start(void) {
        Dl_info info;
        own_base = dladdr((void *) read_at_load_start, &info) ? info.dli_fbase : NULL;
        nnoted = 0;
        noted_overflow = false;
        hs_entry_on_getenv(note);
}

/* The value of name in envp, or NULL. */
static const char *value_in(char *const *envp, const char *name) {
        size_t len = strlen(name);
        for (size_t i = 0; envp[i]; i++)
                if (strncmp(envp[i], name, len) == 0 && envp[i][len] == '=')
                        return envp[i] + len + 1;
        return NULL;
}

int read_at_load_stop(char *const *envp, struct read_at_load_list *list) {
        hs_entry_on_getenv(NULL);
        list->n = 0;
        list->overflowed = noted_overflow;
        for (size_t i = 0; i < nnoted; i++) {
                struct read_at_load *r = &list->items[list->n++];
                *r = noted[i];
                const char *value = value_in(envp, r->name);
                if (value && !(r->value = strdup(value))) {
                        read_at_load_done(list);
                        return -ENOMEM;
                }
        }
        return 0;
}

void read_at_load_done(struct read_at_load_list *list) {
        for (size_t i = 0; i < list->n; i++)
                free(list->items[i].value);
        list->n = 0;
}

const char *read_at_load_refusal(const struct read_at_load_list *list, char *const *envp, char *buf, size_t size) {
        if (list->overflowed)
                return "the daemon's libraries read more environment variables as they loaded than it can compare";
        for (size_t i = 0; i < list->n; i++) {
                const struct read_at_load *r = &list->items[i];
                const char *value = value_in(envp, r->name);
                if ((value == NULL) != (r->value == NULL) || (value && strcmp(value, r->value) != 0)) {
                        snprintf(buf, size, "%s differs from the daemon's, and %s read it as the daemon loaded it",
                                 r->name, r->reader);
                        return buf;
                }
        }
        return NULL;
}
