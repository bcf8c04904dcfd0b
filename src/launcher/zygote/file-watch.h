/* SPDX-License-Identifier: MIT */
/* Noticing that a file the zygote has loaded changed on disk, or that a name the loader looks up
 * now names another file. Exec would load the new file; a zygote still serves the old one, so a
 * change asks for a refresh. We watch the directories (a package update renames a new file over
 * the old name, which no watch on the old inode sees; one inotify watch serves every name in a
 * directory) and compare each watched name's identity with what is loaded, or, for a name that
 * named nothing, whether it names a file now. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "file-identity.h"

struct watched_file {
        char *path;
        const char *name; /* within path */
        int wd;
        bool absent; /* named no file: any file there is a change */
        bool mapped; /* a file this process maps, by the path /proc/self/maps gives */
        struct file_identity id; /* when not absent */
};

struct file_watch {
        int fd; /* inotify; -1 when nothing is watched */
        struct watched_file *files;
        size_t n;
};

/* Watches every file mapped into this process (the libraries and warm programs it has loaded) but
 * those under `skip_dir` and our own executable. Returns 0 or a negative errno; *ret_changed is set
 * to a mapped file that is already not what its path names, if any (caller frees). */
int file_watch_init(struct file_watch *w, const char *skip_dir, char **ret_changed);
/* Adds a file by path, as it is now. */
int file_watch_add(struct file_watch *w, const char *path);
/* Adds a name that should name no file (where the loader looked for a library and found none).
 * Returns 1, adding nothing, if one is there already. */
int file_watch_add_missing(struct file_watch *w, const char *path);
/* Adds path (a loaded object's name, as the loader opened it) and each symlink it leads through,
 * all expected to name the file they name now. Returns 1 if that file is not one this process maps
 * (after file_watch_init): the name changed since the loader opened it. */
int file_watch_add_links(struct file_watch *w, const char *path);
/* Reads pending events; returns a watched path whose file changed (owned by w), or NULL. */
const char *file_watch_read(struct file_watch *w);
void file_watch_done(struct file_watch *w);
