/* SPDX-License-Identifier: MIT */
#include "interposers.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"

/* The families the daemon binds to the library, as exec would. None keeps state that the C
 * library's copy could have set up in the daemon before the launch (obstack and argp keep theirs in
 * the caller's structures and in their own variables, which move along; backtrace keeps none), so
 * the process ends up as exec would have built it (tests/test_interposers.py, with man-db, gettext
 * and binutils). The allocator is not among them: memory the daemon's C library handed out before
 * the launch is still in use, and another free could not take it back. */
static const char *const REBINDABLE[] = { "_obstack_", "obstack_", "argp_", "_argp_", "backtrace" };

static bool rebindable(const char *name) {
        if (strlen(name) >= sizeof(((struct interposed *) NULL)->name))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(REBINDABLE); i++)
                if (strncmp(name, REBINDABLE[i], strlen(REBINDABLE[i])) == 0)
                        return true;
        return false;
}

/* Symbols every object defines for itself (the linker's section markers): never looked up across objects. */
static bool linker_marker(const char *name) {
        return strcmp(name, "_edata") == 0 || strcmp(name, "_end") == 0 || strcmp(name, "__bss_start") == 0 ||
               strcmp(name, "_init") == 0 || strcmp(name, "_fini") == 0;
}

/* Whether the daemon's C library (or its loader) defines name: the daemon's global scope, which a
 * served program's lookups search before the program's own libraries. */
static const char *global_definer(void *libc, const char *name) {
        void *p = dlsym(libc, name);
        Dl_info info;
        if (!p || !dladdr(p, &info) || !info.dli_fname)
                return NULL;
        const char *base = basename(info.dli_fname);
        return strncmp(base, "libc.so.", 8) == 0 || strncmp(base, "ld-linux", 8) == 0 ? base : NULL;
}

struct redefinition {
        char *name;
        uint64_t value; /* st_value: from the library's load address */
        const char *definer; /* the C library's file name */
};

/* What one library defines again, remembered per library, since most programs share theirs (the
 * zygote is replaced when a library changes on disk). */
struct library_redefinitions {
        char *path;
        struct redefinition *items;
        size_t n;
};
static struct library_redefinitions known[256];
static size_t nknown;

/* One past the cache's end: the answer for a library that did not fit, kept until the next call. */
static struct library_redefinitions overflow;

static void redefinitions_done(struct library_redefinitions *k) {
        for (size_t i = 0; i < k->n; i++)
                free(k->items[i].name);
        free(k->items);
        free(k->path);
        *k = (struct library_redefinitions){ 0 };
}

static int add_redefinition(struct library_redefinitions *k, const struct elf_export *x, const char *definer) {
        struct redefinition *items = realloc(k->items, (k->n + 1) * sizeof *items);
        if (!items)
                return -1;
        k->items = items;
        items[k->n] = (struct redefinition){ .name = strdup(x->name), .value = x->value, .definer = definer };
        return items[k->n++].name ? 0 : -1;
}

static const struct library_redefinitions *library_redefinitions(const char *path, void *libc) {
        for (size_t i = 0; i < nknown; i++)
                if (strcmp(known[i].path, path) == 0)
                        return &known[i];
        struct library_redefinitions found = { 0 };
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct elf_exports lib;
        if (fd < 0 || elf_exports_read(fd, &lib) < 0)
                return NULL; /* the loader read it; the plan says what is wrong if it matters */
        int r = 0;
        for (size_t j = 0; j < lib.n && r == 0; j++) {
                const struct elf_export *x = &lib.items[j];
                /* Versioned (glibc's own libm defines finite@GLIBC_2.2.5 as libc does): references
                 * to a version bind where it is defined. */
                if (linker_marker(x->name) || x->version)
                        continue;
                const char *definer = global_definer(libc, x->name);
                if (definer)
                        r = add_redefinition(&found, x, definer);
        }
        elf_exports_done(&lib);
        found.path = r == 0 && nknown < ELEMENTSOF(known) ? strdup(path) : NULL;
        if (!found.path) {
                /* Not remembered, but answered all the same: an unchecked library must not pass. */
                redefinitions_done(&overflow);
                overflow = found;
                return r == 0 ? &overflow : NULL;
        }
        known[nknown] = found;
        return &known[nknown++];
}

static bool program_defines(const struct elf_exports *program, const char *name) {
        for (size_t i = 0; i < program->n; i++)
                if (strcmp(program->items[i].name, name) == 0)
                        return true;
        return false;
}

const struct interposed *interposers_lookup(const struct interposed_list *list, const char *name) {
        for (uint32_t i = 0; i < list->n; i++)
                if (strcmp(list->items[i].name, name) == 0)
                        return &list->items[i];
        return NULL;
}

static const char *add_interposed(struct interposed_list *list, const struct redefinition *d, void *handle,
                                  const struct elf_exports *program) {
        struct link_map *l;
        if (dlinfo(handle, RTLD_DI_LINKMAP, &l) < 0)
                return "the daemon cannot find a library it loaded";
        struct interposed *items = realloc(list->items, (list->n + 1) * sizeof *items);
        if (!items)
                return "out of memory";
        list->items = items;
        struct interposed *i = &items[list->n++];
        *i = (struct interposed){ .address = l->l_addr + d->value, .program_defines = program_defines(program, d->name) };
        snprintf(i->name, sizeof i->name, "%s", d->name);
        return NULL;
}

static size_t libc_position(const struct string_list *closure) {
        for (size_t i = 0; i < closure->n; i++)
                if (strncmp(basename(closure->items[i]), "libc.so.", 8) == 0)
                        return i;
        return closure->n;
}

const char *interposers_find(const struct elf_exports *program, const struct string_list *closure,
                             void *const *handles, struct interposed_list *ret, char *buf, size_t size) {
        *ret = (struct interposed_list){ 0 };
        size_t libc_at = libc_position(closure);
        if (libc_at == closure->n)
                return NULL;
        const char *why = NULL;
        for (size_t i = 0; i < libc_at && !why; i++) {
                const struct library_redefinitions *k = library_redefinitions(closure->items[i], handles[libc_at]);
                for (size_t j = 0; k && j < k->n && !why; j++) {
                        const struct redefinition *d = &k->items[j];
                        if (interposers_lookup(ret, d->name))
                                continue; /* an earlier library's is the one exec binds to */
                        if (!rebindable(d->name))
                                why = (snprintf(buf, size,
                                                "a library it needs defines a symbol of the C library, which a served "
                                                "program would bind to instead: %s in %s (also in %s)",
                                                d->name, closure->items[i], d->definer),
                                       buf);
                        else
                                why = add_interposed(ret, d, handles[i], program);
                }
        }
        if (why)
                interposed_list_done(ret);
        return why;
}

void interposed_list_done(struct interposed_list *list) {
        free(list->items);
        *list = (struct interposed_list){ 0 };
}
