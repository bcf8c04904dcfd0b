/* SPDX-License-Identifier: MIT */
#include "qt-registrations.h"

#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loaded-relocs.h"
#include "macro.h"

/* What a constructor can register with the Qt it links, by the function it calls for it (Qt 5 and
 * Qt 6 name each alike), and how a refusal says it. What Qt's own modules and the plugins Qt loads
 * register by_module is named by their module (qt-registrations.h): those are not counted. */
static const struct kind {
        const char *symbol;
        const char *gave;
        bool by_module;
} kinds[] = {
        { "_Z14qAddPreRoutinePFvvE",
          "a startup routine (qAddPreRoutine) that this program's QCoreApplication would run", false },
        { "_Z21qRegisterResourceDataiPKhS0_S0_",
          "resources (qRegisterResourceData) read before this program's own at the same paths", true },
};

/* An object loaded here that imports one of the kinds' functions, and the Qt it binds it to. (A warm
 * program whose constructors write into Qt is not loaded warm: warm-program.c.) */
struct registrar {
        dev_t dev, qt_dev;
        ino_t ino, qt_ino;
        const struct kind *kind;
        char name[64];
};

static struct registrar *registrars;
static size_t nregistrars;
static bool looked;

/* What imports_kind looks for in one object's relocations. */
struct import_search {
        bool qts_own;             /* the object is Qt's own module or a plugin */
        const struct kind *found;
};

static int imports_kind(const struct loaded_reloc *r, void *userdata) {
        struct import_search *search = userdata;
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                if (!(kinds[i].by_module && search->qts_own) && strcmp(r->name, kinds[i].symbol) == 0) {
                        search->found = &kinds[i];
                        return 1;
                }
        return 0;
}

/* The file that defines the function the object binds to: the first in its own lookup scope (the
 * zygote loads every library with RTLD_LOCAL), as the loader bound it. */
static bool qt_of(const struct link_map *object, const char *symbol, struct stat *ret) {
        void *handle = dlopen(object->l_name, RTLD_LAZY | RTLD_NOLOAD);
        void *fn = handle ? dlsym(handle, symbol) : NULL;
        Dl_info info;
        bool found = fn && dladdr(fn, &info) && info.dli_fname && stat(info.dli_fname, ret) == 0;
        if (handle)
                dlclose(handle);
        return found;
}

static void add_registrar(const struct link_map *object, const struct kind *kind) {
        struct stat own, qt;
        if (stat(object->l_name, &own) < 0 || !qt_of(object, kind->symbol, &qt))
                return;
        struct registrar *more = realloc(registrars, (nregistrars + 1) * sizeof *more);
        if (!more)
                return;
        registrars = more;
        struct registrar *r = &registrars[nregistrars++];
        *r = (struct registrar){ .dev = own.st_dev, .ino = own.st_ino, .qt_dev = qt.st_dev, .qt_ino = qt.st_ino,
                                 .kind = kind };
        snprintf(r->name, sizeof r->name, "%s", basename(object->l_name));
}

/* Whether the object links Qt's core library, which any caller of the kinds' functions does: the
 * other objects' relocations (tens of thousands in a GTK zygote) are not read, a cost the daemon's
 * start on a slow board would pay. */
static bool links_qt(const struct link_map *object) {
        return loaded_needs(object, "libQt5Core.so.5") || loaded_needs(object, "libQt6Core.so.6");
}

/* One of Qt's own modules, or a plugin in Qt's folders (platform, style, image format, QML). */
static bool qts_own(const struct link_map *object) {
        const char *name = basename(object->l_name);
        return strncmp(name, "libQt5", 6) == 0 || strncmp(name, "libQt6", 6) == 0 ||
               strstr(object->l_name, "/qt5/") || strstr(object->l_name, "/qt6/");
}

/* Every object loaded now that calls one of the kinds' functions (whether from its constructors is
 * not known: docs/limitations.md). Once: the zygote loads nothing after its start (what children
 * load after main is theirs). */
static void look(void) {
        if (looked)
                return;
        looked = true;
        struct link_map *first = NULL;
        void *self = dlopen(NULL, RTLD_LAZY);
        if (self && dlinfo(self, RTLD_DI_LINKMAP, &first) == 0)
                for (const struct link_map *l = first; l; l = l->l_next) {
                        struct import_search search = { .qts_own = qts_own(l) };
                        if (l->l_name[0] == '/' && links_qt(l) && loaded_relocs_walk(l, imports_kind, &search) == 1)
                                add_registrar(l, search.found);
                }
        if (self)
                dlclose(self);
}

bool qt_registrations_any(void) {
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

const char *qt_registrations_verdict(dev_t dev, ino_t ino, const struct string_list *libs,
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
                        snprintf(buf, size, "%s, loaded for another program, gave its Qt %s", r->name, r->kind->gave);
                        why = buf;
                }
        }
        free(ids);
        return why;
}
