/* SPDX-License-Identifier: MIT */
#include "settings-files.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "protocol.h"

/* Under the user's configuration folder ($XDG_CONFIG_HOME, else ~/.config). */
static const char *const USER_CONFIG[] = {
        "dconf/user", /* dconf's service writes it anew for each change */
        "gtk-3.0/settings.ini", "gtk-3.0/gtk.css", "gtk-4.0/settings.ini", "gtk-4.0/gtk.css",
        "fontconfig/fonts.conf",
};
/* Under each system configuration folder ($XDG_CONFIG_DIRS, else /etc/xdg), and /etc (GTK's own). */
static const char *const SYSTEM_CONFIG[] = { "gtk-3.0/settings.ini", "gtk-4.0/settings.ini" };
/* GLib's defaults for the variables the toolkit reads its folders from. */
#define DEFAULT_CONFIG_DIRS "/etc/xdg"
#define DEFAULT_DATA_DIRS "/usr/local/share/:/usr/share/"
/* fontconfig's own configuration folder, where a relative FONTCONFIG_FILE is also looked for. */
#define FONTCONFIG_DIR "/etc/fonts"
/* How deep below a user's font folder fontconfig's fonts are looked for (it has no limit). */
#define FONT_FOLDER_DEPTH 4

struct look {
        struct settings_files *f;
        char *const *envp;
        int cwd_fd;
};

static struct settings_file_mark mark_of(int cwd_fd, char *path) {
        struct stat st;
        if (fstatat(cwd_fd, path, &st, 0) < 0)
                return (struct settings_file_mark){ .path = path, .present = false };
        return (struct settings_file_mark){ .path = path, .present = true, .id = file_identity_of(&st) };
}

static bool same_mark(const struct settings_file_mark *a, const struct settings_file_mark *b) {
        return a->present == b->present && (!a->present || file_identity_same(&a->id, &b->id));
}

/* folder/name as GLib's g_build_filename makes it: name alone under an empty folder. */
static bool join(char *path, const char *folder, const char *name) {
        int n = folder[0] ? snprintf(path, PATH_MAX, "%s/%s", folder, name) : snprintf(path, PATH_MAX, "%s", name);
        return n >= 0 && n < PATH_MAX;
}

static void add(struct look *l, const char *path) {
        struct settings_files *f = l->f;
        char *copy;
        if (f->n == SETTINGS_FILES_MAX || !(copy = strdup(path))) {
                f->blind = "more than " STRINGIFY(SETTINGS_FILES_MAX) " files to look at";
                return;
        }
        f->marks[f->n++] = mark_of(l->cwd_fd, copy);
}

static void add_under(struct look *l, const char *folder, const char *name) {
        char path[PATH_MAX];
        if (join(path, folder, name))
                add(l, path);
}

/* Calls fn with the path of each entry of folder (in the launch's working directory). */
static void for_each_entry(struct look *l, const char *folder, void (*fn)(struct look *, const char *, int), int arg) {
        int fd = openat(l->cwd_fd, folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        char path[PATH_MAX];
        for (struct dirent *e; (e = readdir(d)) && !l->f->blind;)
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && join(path, folder, e->d_name))
                        fn(l, path, arg);
        closedir(d);
}

static void add_entry(struct look *l, const char *path, int unused) {
        (void) unused;
        add(l, path);
}

/* A configuration folder (conf.d) and each file in it: one written in place changes no folder. */
static void add_config_folder(struct look *l, const char *folder) {
        add(l, folder);
        for_each_entry(l, folder, add_entry, 0);
}

static void add_font_folder(struct look *l, const char *folder, int depth);

static void add_font_subfolder(struct look *l, const char *path, int depth) {
        struct stat st;
        if (fstatat(l->cwd_fd, path, &st, 0) == 0 && S_ISDIR(st.st_mode))
                add_font_folder(l, path, depth);
}

/* A font folder and the folders in it, down to depth: fontconfig finds fonts in all of them, and
 * a font made or removed changes the folder it is in. */
static void add_font_folder(struct look *l, const char *folder, int depth) {
        add(l, folder);
        if (depth > 0)
                for_each_entry(l, folder, add_font_subfolder, depth - 1);
}

/* The variable's value if set and not empty, else fallback (GLib's rule for the XDG variables). */
static const char *value_or(const struct look *l, const char *name, const char *fallback) {
        const char *v = hs_env_value(l->envp, name);
        return v && v[0] ? v : fallback;
}

/* Each entry of a ':'-separated list, as GLib splits it (an empty entry is the working directory). */
static void add_each(struct look *l, const char *list, void (*add_in)(struct look *, const char *)) {
        char folder[PATH_MAX];
        for (const char *p = list;;) {
                size_t len = strcspn(p, ":");
                if (len < sizeof folder) {
                        memcpy(folder, p, len);
                        folder[len] = '\0';
                        add_in(l, folder);
                }
                if (!p[len])
                        break;
                p += len + 1;
        }
}

static void add_system_config(struct look *l, const char *folder) {
        for (size_t i = 0; i < sizeof SYSTEM_CONFIG / sizeof *SYSTEM_CONFIG; i++)
                add_under(l, folder, SYSTEM_CONFIG[i]);
}

/* GSettings' compiled schemas in a data folder: the defaults of every setting (an override
 * compiled in changes them). */
static void add_data_schemas(struct look *l, const char *folder) {
        add_under(l, folder, "glib-2.0/schemas/gschemas.compiled");
}

static void add_schemas(struct look *l, const char *folder) {
        add_under(l, folder, "gschemas.compiled");
}

/* fontconfig's configuration folder: its fonts.conf (or FONTCONFIG_FILE's name there), conf.d. */
static void add_fontconfig_dir(struct look *l, const char *folder) {
        const char *file = value_or(l, "FONTCONFIG_FILE", "fonts.conf");
        char path[PATH_MAX];
        if (file[0] != '/')
                add_under(l, folder, file);
        if (join(path, folder, "conf.d"))
                add_config_folder(l, path);
}

static void add_fontconfig(struct look *l) {
        const char *file = hs_env_value(l->envp, "FONTCONFIG_FILE");
        if (file && file[0] == '/')
                add(l, file);
        const char *path = hs_env_value(l->envp, "FONTCONFIG_PATH");
        if (path && path[0])
                add_each(l, path, add_fontconfig_dir);
        add_fontconfig_dir(l, FONTCONFIG_DIR);
}

/* The home folder as GLib finds it: $HOME when set, else the password database's. That is read
 * from /etc/passwd alone: getpwuid() could load an NSS module into the zygote, and connect to a
 * directory service, which every child would then share. NULL when it is not there. */
static const char *home_folder(const struct look *l, char *buf) {
        const char *home = hs_env_value(l->envp, "HOME");
        if (home)
                return home;
        FILE *f = fopen("/etc/passwd", "re");
        const char *found = NULL;
        for (struct passwd *pw; !found && f && (pw = fgetpwent(f));)
                if (pw->pw_uid == getuid() && pw->pw_dir && snprintf(buf, PATH_MAX, "%s", pw->pw_dir) < PATH_MAX)
                        found = buf;
        if (f)
                fclose(f);
        return found;
}

static void look_at_all(struct look *l) {
        char home_buf[PATH_MAX], config[PATH_MAX], data[PATH_MAX], path[PATH_MAX];
        const char *home = home_folder(l, home_buf);
        if (!home)
                l->f->blind = "HOME is unset and the user is not in /etc/passwd";
        const char *user_config = value_or(l, "XDG_CONFIG_HOME", home && join(config, home, ".config") ? config : NULL);
        const char *user_data = value_or(l, "XDG_DATA_HOME", home && join(data, home, ".local/share") ? data : NULL);

        if (user_config) {
                for (size_t i = 0; i < sizeof USER_CONFIG / sizeof *USER_CONFIG; i++)
                        add_under(l, user_config, USER_CONFIG[i]);
                if (join(path, user_config, "fontconfig/conf.d"))
                        add_config_folder(l, path);
        }
        if (home) {
                add_under(l, home, ".fonts.conf");
                if (join(path, home, ".fonts.conf.d"))
                        add_config_folder(l, path);
                if (join(path, home, ".fonts"))
                        add_font_folder(l, path, FONT_FOLDER_DEPTH);
        }
        if (user_data) {
                if (join(path, user_data, "fonts"))
                        add_font_folder(l, path, FONT_FOLDER_DEPTH);
                add_data_schemas(l, user_data);
        }
        add_each(l, value_or(l, "XDG_CONFIG_DIRS", DEFAULT_CONFIG_DIRS), add_system_config);
        add_system_config(l, "/etc");
        add_each(l, value_or(l, "XDG_DATA_DIRS", DEFAULT_DATA_DIRS), add_data_schemas);
        const char *schema_dirs = hs_env_value(l->envp, "GSETTINGS_SCHEMA_DIR");
        if (schema_dirs)
                add_each(l, schema_dirs, add_schemas);
        add_fontconfig(l);
}

void settings_files_forget(struct settings_files *f) {
        for (size_t i = 0; i < f->n; i++)
                free(f->marks[i].path);
        f->n = 0;
        f->blind = NULL;
}

void settings_files_look(struct settings_files *f, char *const *envp, int cwd_fd) {
        settings_files_forget(f);
        struct look l = { .f = f, .envp = envp, .cwd_fd = cwd_fd };
        look_at_all(&l);
}

bool settings_files_changed(const struct settings_files *f, int cwd_fd, char *changed, size_t size) {
        if (f->blind) {
                if (changed)
                        snprintf(changed, size, "%s", f->blind);
                return true;
        }
        for (size_t i = 0; i < f->n; i++) {
                struct settings_file_mark now = mark_of(cwd_fd, f->marks[i].path);
                if (!same_mark(&now, &f->marks[i])) {
                        if (changed)
                                snprintf(changed, size, "%s", f->marks[i].path);
                        return true;
                }
        }
        return false;
}
