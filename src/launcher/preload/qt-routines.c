/* SPDX-License-Identifier: MIT */
#include "qt-routines.h"

#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loaded-relocs.h"

/* qAddPreRoutine(QtStartUpFunction), as Qt 5 and Qt 6 both name it. */
#define PRE_ROUTINE "_Z14qAddPreRoutinePFvvE"

/* An object that imports qAddPreRoutine, and the Qt it binds it to. */
struct registrar {
        dev_t dev, qt_dev;
        ino_t ino, qt_ino;
        char name[64];
};

static struct registrar *registrars;
static size_t nregistrars;
static bool looked;

static int is_pre_routine(const struct loaded_reloc *r, void *userdata) {
        (void) userdata;
        return strcmp(r->name, PRE_ROUTINE) == 0;
}

/* The file that defines the qAddPreRoutine the object binds to: the first in its own lookup scope
 * (the zygote loads every library with RTLD_LOCAL), as the loader bound it. */
static bool qt_of(const struct link_map *object, struct stat *ret) {
        void *handle = dlopen(object->l_name, RTLD_LAZY | RTLD_NOLOAD);
        void *fn = handle ? dlsym(handle, PRE_ROUTINE) : NULL;
        Dl_info info;
        bool found = fn && dladdr(fn, &info) && info.dli_fname && stat(info.dli_fname, ret) == 0;
        if (handle)
                dlclose(handle);
        return found;
}

static void add_registrar(const struct link_map *object) {
        struct stat own, qt;
        if (stat(object->l_name, &own) < 0 || !qt_of(object, &qt))
                return;
        struct registrar *more = realloc(registrars, (nregistrars + 1) * sizeof *more);
        if (!more)
                return;
        registrars = more;
        struct registrar *r = &registrars[nregistrars++];
        *r = (struct registrar){ .dev = own.st_dev, .ino = own.st_ino, .qt_dev = qt.st_dev, .qt_ino = qt.st_ino };
        const char *slash = strrchr(object->l_name, '/');
        snprintf(r->name, sizeof r->name, "%s", slash ? slash + 1 : object->l_name);
}

/* Whether the object links Qt's core library, which any caller of qAddPreRoutine does: the other
 * objects' relocations (tens of thousands in a GTK zygote) are not read, a cost the daemon's start
 * on a slow board would pay. */
static bool links_qt(const struct link_map *object) {
        return loaded_needs(object, "libQt5Core.so.5") || loaded_needs(object, "libQt6Core.so.6");
}

/* Every object loaded now that imports qAddPreRoutine. Once: the zygote loads nothing after its
 * start (what children load after main is theirs). */
static void look(void) {
        if (looked)
                return;
        looked = true;
        struct link_map *first = NULL;
        void *self = dlopen(NULL, RTLD_LAZY);
        if (self && dlinfo(self, RTLD_DI_LINKMAP, &first) == 0)
                for (const struct link_map *l = first; l; l = l->l_next)
                        if (l->l_name[0] == '/' && links_qt(l) && loaded_relocs_walk(l, is_pre_routine, NULL) == 1)
                                add_registrar(l);
        if (self)
                dlclose(self);
}

bool qt_routines_any(void) {
        look();
        return nregistrars > 0;
}

static bool in(const struct stat *ids, size_t n, dev_t dev, ino_t ino) {
        for (size_t i = 0; i < n; i++)
                if (ids[i].st_dev == dev && ids[i].st_ino == ino)
                        return true;
        return false;
}

/* Adds the file of each path that can be looked at to ids. */
static size_t add_ids(struct stat *ids, size_t n, const struct string_list *paths) {
        for (size_t i = 0; i < paths->n; i++)
                if (stat(paths->items[i], &ids[n]) == 0)
                        n++;
        return n;
}

const char *qt_routines_verdict(dev_t dev, ino_t ino, const struct string_list *libs,
                                const struct string_list *after_main, char *buf, size_t size) {
        look();
        if (nregistrars == 0)
                return NULL;
        struct stat *ids = calloc(1 + libs->n + after_main->n, sizeof *ids);
        if (!ids)
                return "out of memory";
        ids[0] = (struct stat){ .st_dev = dev, .st_ino = ino };
        size_t n = add_ids(ids, add_ids(ids, 1, libs), after_main);
        const char *why = NULL;
        for (size_t i = 0; i < nregistrars && !why; i++) {
                const struct registrar *r = &registrars[i];
                if (in(ids, n, r->qt_dev, r->qt_ino) && !in(ids, n, r->dev, r->ino)) {
                        snprintf(buf, size,
                                 "%s, loaded for another program, gave its Qt a startup routine (qAddPreRoutine) "
                                 "that this program's QCoreApplication would run",
                                 r->name);
                        why = buf;
                }
        }
        free(ids);
        return why;
}
