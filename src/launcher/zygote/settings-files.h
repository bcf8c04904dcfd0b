/* SPDX-License-Identifier: MIT */
/* The files a GTK toolkit reads its settings from as it starts, and whether any changed since a
 * look: GSettings' dconf database and compiled schemas, GTK 3's and GTK 4's settings.ini and the
 * user's gtk.css, and fontconfig's configuration and the user's font folders. A toolkit started
 * ahead read them then and, but for dconf, never reads them again: GTK watches none of them, so a
 * window would show the old theme, style or fonts for as long as the program runs (a new user's
 * trial, 2026-12-02). The look names each file as the toolkit would for the launch's environment
 * (its HOME, else the user's home in /etc/passwd; relative folders in the launch's
 * working directory, as GLib takes them). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "file-identity.h"

/* A look at more files than this (fonts in many folders, dozens of XDG_CONFIG_DIRS) takes none as
 * unchanged: what it could not look at might have changed. */
#define SETTINGS_FILES_MAX 1024

struct settings_file_mark {
        char *path; /* as the toolkit names it: relative ones in the launch's working directory */
        bool present;
        struct file_identity id;
};

struct settings_files {
        size_t n;
        const char *blind; /* why the look could not see every file (then none is taken as unchanged);
                            * NULL when it could */
        struct settings_file_mark marks[SETTINGS_FILES_MAX];
};

/* Looks at the files a program with the environment envp, in the working directory cwd_fd, reads
 * as its toolkit starts (f's earlier look is forgotten). */
void settings_files_look(struct settings_files *f, char *const *envp, int cwd_fd);

/* Whether any of them is not as at the look: written, replaced, made or removed (a folder: an
 * entry made or removed). What changed (a path, or why the look cannot tell) goes to changed (size
 * bytes) when it is not NULL. */
bool settings_files_changed(const struct settings_files *f, int cwd_fd, char *changed, size_t size);

void settings_files_forget(struct settings_files *f);
