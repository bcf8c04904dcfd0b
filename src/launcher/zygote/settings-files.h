/* SPDX-License-Identifier: MIT */
/* The files a GTK toolkit reads its settings from as it starts, and whether any changed since a
 * look: GSettings' dconf database, GTK 3's and GTK 4's settings.ini and the user's gtk.css, and
 * fontconfig's configuration and the user's font folders. A toolkit started ahead read them then
 * and, but for dconf, never reads them again: GTK watches none of them, so a window would show the
 * old theme, style or fonts for as long as the program runs (a new user's trial, 2026-12-02). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define SETTINGS_FILES_MAX 24

struct settings_file_mark {
        bool present;
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime, ctime;
};

struct settings_files {
        size_t n;
        struct settings_file_mark marks[SETTINGS_FILES_MAX];
};

/* Looks at the files a program with the environment envp reads (its HOME and XDG_* folders). */
void settings_files_look(struct settings_files *f, char *const *envp);

/* Whether any of them is not as at the look f made with the same envp: written, replaced, made or
 * removed (a folder: an entry made or removed). The first changed one's path goes to changed
 * (size bytes) when it is not NULL. */
bool settings_files_changed(const struct settings_files *f, char *const *envp, char *changed, size_t size);
