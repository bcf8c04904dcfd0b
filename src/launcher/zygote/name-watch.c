/* SPDX-License-Identifier: MIT */
#include "name-watch.h"

#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where glibc's loader finds a soname that no RPATH, LD_LIBRARY_PATH or RUNPATH directory has.
 * ldconfig writes it anew and renames it into place, on every run: each run refreshes. */
#define LOADER_CACHE "/etc/ld.so.cache"

struct names {
        struct string_list loaded;
        const char *skip_dir;
        bool failed;
};

static bool under(const char *path, const char *dir) {
        size_t n = strlen(dir);
        return dir[0] && strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* The names the loader opened the objects by (link_map's l_name), not the files /proc/self/maps
 * gives, which are where their symlinks lead. What the daemon loaded through an fd it checked
 * (/proc/PID/fd/N: a warm program) is no name the loader looks up, and its file is watched as
 * mapped; the link names another process's fd once this zygote's is gone. */
static int collect(struct dl_phdr_info *info, size_t size, void *data) {
        struct names *n = data;
        const char *name = info->dlpi_name;
        (void) size;
        if (name && name[0] == '/' && !under(name, n->skip_dir) && !under(name, "/proc") &&
            !string_list_contains(&n->loaded, name) &&
            string_list_add(&n->loaded, name) < 0)
                n->failed = true;
        return 0;
}

struct outcome {
        char **changed;
        size_t unwatched;
        char *problem;
        size_t size;
};

/* r from file_watch_add*: 1 a change already, a missing directory nothing to watch. */
static void note(struct outcome *o, const char *path, int r) {
        if (r == 1 && !*o->changed)
                *o->changed = strdup(path);
        if (r >= 0 || r == -ENOENT || r == -ENOTDIR)
                return;
        if (o->unwatched++ == 0)
                snprintf(o->problem, o->size, "%s: %s", path, strerror(-r));
}

void name_watch_add(struct file_watch *w, const char *skip_dir, const struct string_list *missing,
                    char **ret_changed, char *problem, size_t size) {
        struct outcome o = { .changed = ret_changed, .problem = problem, .size = size };
        struct names n = { .skip_dir = skip_dir };
        problem[0] = '\0';
        (void) dl_iterate_phdr(collect, &n);
        if (n.failed)
                note(&o, "the loaded objects' names", -ENOMEM);
        for (size_t i = 0; i < n.loaded.n; i++)
                note(&o, n.loaded.items[i], file_watch_add_links(w, n.loaded.items[i]));
        string_list_done(&n.loaded);
        int r = file_watch_add(w, LOADER_CACHE);
        note(&o, LOADER_CACHE, r == -ENOENT ? file_watch_add_missing(w, LOADER_CACHE) : r);
        for (size_t i = 0; missing && i < missing->n; i++)
                note(&o, missing->items[i], file_watch_add_missing(w, missing->items[i]));
        if (o.unwatched > 1) {
                size_t len = strlen(problem);
                snprintf(problem + len, size - len, " (and %zu more)", o.unwatched - 1);
        }
}
