/* SPDX-License-Identifier: MIT */
/* Linked into the start programs: logs each name asked of getenv and secure_getenv to $LOG_FILE
 * while `armed`, which they set around the toolkit's start. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int armed;

static void note(const char *name) {
        static char *(*real)(const char *);
        if (!real)
                real = (char *(*)(const char *)) dlsym(RTLD_NEXT, "getenv");
        const char *path = real("LOG_FILE");
        FILE *f = armed && name && path ? fopen(path, "ae") : NULL;
        if (f) {
                fprintf(f, "%s\n", name);
                fclose(f);
        }
}

char *getenv(const char *name) {
        static char *(*real)(const char *);
        if (!real)
                real = (char *(*)(const char *)) dlsym(RTLD_NEXT, "getenv");
        note(name);
        return real(name);
}

char *secure_getenv(const char *name) {
        static char *(*real)(const char *);
        if (!real)
                real = (char *(*)(const char *)) dlsym(RTLD_NEXT, "secure_getenv");
        note(name);
        return real(name);
}
