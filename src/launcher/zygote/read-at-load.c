/* SPDX-License-Identifier: MIT */
#include "read-at-load.h"

#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env-reads.h"

/* Filled by the hook, which may run inside any library's code (an allocator's own start, a
 * constructor under the loader's lock): no allocation and no look-up there (the caller is named at
 * the stop), and a lock of its own for a library's thread. */
static struct {
        char name[READ_AT_LOAD_NAME_MAX];
        const void *caller;
} noted[READ_AT_LOAD_MAX];
static size_t nnoted;
static bool noted_overflow;
static bool noted_lock; /* __atomic_test_and_set works on a byte */
/* The daemon's executable, whose own reads are not a library's. */
static uintptr_t own_start, own_end;

static int find_own(struct dl_phdr_info *info, size_t size, void *data) {
        (void) size, (void) data;
        for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                uintptr_t start = info->dlpi_addr + ph->p_vaddr;
                if (ph->p_type != PT_LOAD)
                        continue;
                if (!own_start || start < own_start)
                        own_start = start;
                if (start + ph->p_memsz > own_end)
                        own_end = start + ph->p_memsz;
        }
        return 1; /* the first object is the executable */
}

static void note(const char *name, const void *caller) {
        if ((uintptr_t) caller >= own_start && (uintptr_t) caller < own_end)
                return;
        while (__atomic_test_and_set(&noted_lock, __ATOMIC_ACQUIRE))
                ;
        bool known = false;
        for (size_t i = 0; i < nnoted && !known; i++)
                known = strcmp(noted[i].name, name) == 0;
        if (!known && (nnoted == READ_AT_LOAD_MAX || strlen(name) >= READ_AT_LOAD_NAME_MAX))
                noted_overflow = true;
        else if (!known) {
                snprintf(noted[nnoted].name, READ_AT_LOAD_NAME_MAX, "%s", name);
                noted[nnoted].caller = caller;
                nnoted++;
        }
        __atomic_clear(&noted_lock, __ATOMIC_RELEASE);
}

void read_at_load_start(void) {
        own_start = own_end = 0;
        (void) dl_iterate_phdr(find_own, NULL);
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
        Dl_info info;
        list->n = 0;
        list->overflowed = noted_overflow;
        for (size_t i = 0; i < nnoted; i++) {
                /* A library unloaded since took what it read with it. */
                if (!dladdr(noted[i].caller, &info))
                        continue;
                struct read_at_load *r = &list->items[list->n++];
                memcpy(r->name, noted[i].name, sizeof r->name);
                snprintf(r->reader, sizeof r->reader, "%s", info.dli_fname ? basename(info.dli_fname) : "");
                r->value = NULL;
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
