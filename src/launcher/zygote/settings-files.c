/* SPDX-License-Identifier: MIT */
#include "settings-files.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "protocol.h"

/* Under the user's configuration folder ($XDG_CONFIG_HOME, else ~/.config). */
static const char *const USER_CONFIG[] = {
        "dconf/user", /* dconf's service writes it anew for each change */
        "gtk-3.0/settings.ini", "gtk-3.0/gtk.css", "gtk-4.0/settings.ini", "gtk-4.0/gtk.css",
        "fontconfig/fonts.conf", "fontconfig/conf.d",
};
/* Under each system configuration folder ($XDG_CONFIG_DIRS, else /etc/xdg), and /etc (GTK's own). */
static const char *const SYSTEM_CONFIG[] = { "gtk-3.0/settings.ini", "gtk-4.0/settings.ini" };
/* Under the home folder: fontconfig's older places for the user's configuration and fonts. */
static const char *const HOME_FILES[] = { ".fonts.conf", ".fonts.conf.d", ".fonts" };
static const char *const FIXED[] = { "/etc/fonts/fonts.conf", "/etc/fonts/conf.d" };

typedef void (*visit_fn)(const char *path, void *userdata);

static void visit_under(const char *folder, const char *const *names, size_t n, visit_fn visit, void *userdata) {
        char path[PATH_MAX];
        for (size_t i = 0; i < n; i++)
                if (snprintf(path, sizeof path, "%s/%s", folder, names[i]) < (int) sizeof path)
                        visit(path, userdata);
}

/* Each file, in the same order for the same envp. Relative folders are not the toolkit's either:
 * GLib ignores them. */
static void visit_all(char *const *envp, visit_fn visit, void *userdata) {
        const char *home = hs_env_value(envp, "HOME");
        const char *config = hs_env_value(envp, "XDG_CONFIG_HOME");
        const char *data = hs_env_value(envp, "XDG_DATA_HOME");
        const char *dirs = hs_env_value(envp, "XDG_CONFIG_DIRS");
        bool has_home = home && home[0] == '/';
        char folder[PATH_MAX];

        if (config && config[0] == '/')
                visit_under(config, USER_CONFIG, sizeof USER_CONFIG / sizeof *USER_CONFIG, visit, userdata);
        else if (has_home && snprintf(folder, sizeof folder, "%s/.config", home) < (int) sizeof folder)
                visit_under(folder, USER_CONFIG, sizeof USER_CONFIG / sizeof *USER_CONFIG, visit, userdata);
        if (has_home)
                visit_under(home, HOME_FILES, sizeof HOME_FILES / sizeof *HOME_FILES, visit, userdata);
        if (data && data[0] == '/' && snprintf(folder, sizeof folder, "%s/fonts", data) < (int) sizeof folder)
                visit(folder, userdata);
        else if (has_home && snprintf(folder, sizeof folder, "%s/.local/share/fonts", home) < (int) sizeof folder)
                visit(folder, userdata);

        const char *list = dirs && dirs[0] ? dirs : "/etc/xdg";
        for (const char *p = list; *p;) {
                size_t len = strcspn(p, ":");
                if (p[0] == '/' && len < sizeof folder) {
                        memcpy(folder, p, len);
                        folder[len] = '\0';
                        visit_under(folder, SYSTEM_CONFIG, sizeof SYSTEM_CONFIG / sizeof *SYSTEM_CONFIG, visit,
                                    userdata);
                }
                p += len + (p[len] == ':');
        }
        visit_under("/etc", SYSTEM_CONFIG, sizeof SYSTEM_CONFIG / sizeof *SYSTEM_CONFIG, visit, userdata);
        for (size_t i = 0; i < sizeof FIXED / sizeof *FIXED; i++)
                visit(FIXED[i], userdata);
}

static struct settings_file_mark mark_of(const char *path) {
        struct stat st;
        if (stat(path, &st) < 0)
                return (struct settings_file_mark){ .present = false };
        return (struct settings_file_mark){ .present = true, .dev = st.st_dev, .ino = st.st_ino,
                                            .size = st.st_size, .mtime = st.st_mtim, .ctime = st.st_ctim };
}

static bool same_time(struct timespec a, struct timespec b) {
        return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool same_mark(const struct settings_file_mark *a, const struct settings_file_mark *b) {
        if (a->present != b->present)
                return false;
        return !a->present || (a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
                               same_time(a->mtime, b->mtime) && same_time(a->ctime, b->ctime));
}

static void record(const char *path, void *userdata) {
        struct settings_files *f = userdata;
        if (f->n < SETTINGS_FILES_MAX)
                f->marks[f->n++] = mark_of(path);
}

void settings_files_look(struct settings_files *f, char *const *envp) {
        f->n = 0;
        visit_all(envp, record, f);
}

struct comparison {
        const struct settings_files *then;
        size_t i;
        char *changed;
        size_t size;
        bool found;
};

static void compare(const char *path, void *userdata) {
        struct comparison *c = userdata;
        if (c->found || c->i >= c->then->n)
                return;
        struct settings_file_mark now = mark_of(path);
        if (!same_mark(&now, &c->then->marks[c->i++])) {
                c->found = true;
                if (c->changed)
                        snprintf(c->changed, c->size, "%s", path);
        }
}

bool settings_files_changed(const struct settings_files *f, char *const *envp, char *changed, size_t size) {
        struct comparison c = { .then = f, .changed = changed, .size = size };
        visit_all(envp, compare, &c);
        return c.found;
}
