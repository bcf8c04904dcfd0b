/* SPDX-License-Identifier: MIT */
#include "qt-file-path.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "macro.h"

struct qt_core {
        const char *soname;
        const char *private_version, *version;
        const char *string_constructor; /* QString(const QChar *, int or qsizetype) */
};

static const struct qt_core QT_CORES[] = {
        { "libQt5Core.so.5", "Qt_5_PRIVATE_API", "Qt_5", "_ZN7QStringC1EPK5QChari" },
        { "libQt6Core.so.6", "Qt_6_PRIVATE_API", "Qt_6", "_ZN7QStringC1EPK5QCharx" },
};
#define SET_FILE_PATH "_ZN23QCoreApplicationPrivate22setApplicationFilePathERK7QString"

typedef void (*string_constructor_fn)(void *self, const uint16_t *unicode, long size);
typedef void (*set_file_path_fn)(const void *path);

struct calls {
        string_constructor_fn construct;
        set_file_path_fn set;
};

/* The path of the loaded object named soname, or NULL. Looked up in the link map: dlopen with
 * RTLD_NOLOAD still searches the library path and opens a file of that name to compare it with
 * those loaded, which every launch of a program without Qt paid twice (18 system calls). */
static const char *loaded_path_of(const char *soname) {
        for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next) {
                if (strcmp(basename(l->l_name), soname) == 0)
                        return l->l_name;
        }
        return NULL;
}

/* 1 with *ret set, 0 when this Qt Core is not loaded, -ENOTSUP when it lacks a call. */
static int find_calls(const struct qt_core *q, struct calls *ret) {
        const char *path = loaded_path_of(q->soname);
        void *h = path ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
        if (!h)
                return 0;
        void *construct = dlvsym(h, q->string_constructor, q->version);
        void *set = dlvsym(h, SET_FILE_PATH, q->private_version);
        dlclose(h); /* still loaded: NOLOAD only counted a reference */
        if (!construct || !set)
                return -ENOTSUP;
        /* POSIX: dlsym's result converts to a function pointer. */
        *ret = (struct calls){ (string_constructor_fn) construct, (set_file_path_fn) set };
        return 1;
}

/* How many continuation bytes follow a UTF-8 sequence's first byte; -1 when it is none. */
static int continuation_bytes(unsigned char lead) {
        if (lead < 0x80)
                return 0;
        if ((lead & 0xe0) == 0xc0)
                return 1;
        if ((lead & 0xf0) == 0xe0)
                return 2;
        return (lead & 0xf8) == 0xf0 ? 3 : -1;
}

/* UTF-8 to UTF-16, as Qt decodes a file name on Linux. Returns the units written or -EILSEQ. */
static long utf16_of(const char *s, uint16_t *out, size_t max) {
        size_t n = 0;
        for (const unsigned char *p = (const unsigned char *) s; *p;) {
                uint32_t c;
                int extra = continuation_bytes(*p);
                if (extra < 0)
                        return -EILSEQ;
                c = extra == 0 ? *p : *p & (0x3f >> extra);
                p++;
                for (int k = 0; k < extra; k++, p++) {
                        if ((*p & 0xc0) != 0x80)
                                return -EILSEQ;
                        c = c << 6 | (*p & 0x3f);
                }
                if (n + 2 > max)
                        return -EILSEQ;
                if (c >= 0x10000) {
                        c -= 0x10000;
                        out[n++] = (uint16_t) (0xd800 | (c >> 10));
                        out[n++] = (uint16_t) (0xdc00 | (c & 0x3ff));
                } else
                        out[n++] = (uint16_t) c;
        }
        return (long) n;
}

int qt_file_path_set(const char *path) {
        uint16_t unicode[4096];
        long n = -1;
        for (size_t i = 0; i < ELEMENTSOF(QT_CORES); i++) {
                struct calls calls;
                int r = find_calls(&QT_CORES[i], &calls);
                if (r <= 0) {
                        if (r < 0)
                                return r;
                        continue;
                }
                if (n < 0 && (n = utf16_of(path, unicode, ELEMENTSOF(unicode))) < 0)
                        return (int) n;
                /* A QString is one pointer in Qt 5 and three in Qt 6; it stays alive (Qt copies it). */
                static _Alignas(16) unsigned char string[2][64];
                calls.construct(string[i], unicode, n);
                calls.set(string[i]);
        }
        return 0;
}
