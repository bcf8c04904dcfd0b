/* SPDX-License-Identifier: MIT */
#include "file-watch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "macro.h"

#define DIR_EVENTS (IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB)

static bool watching(const struct file_watch *w, const char *path) {
        for (size_t i = 0; i < w->n; i++)
                if (strcmp(w->files[i].path, path) == 0)
                        return true;
        return false;
}

/* Watches path's directory for its name, expecting the file st describes there, or none (NULL). */
static int add_entry(struct file_watch *w, const char *path, const struct stat *st, bool mapped) {
        if (watching(w, path))
                return 0;
        _cleanup_free_ char *dir = strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (!slash)
                return dir ? -EINVAL : -ENOMEM;
        *slash = '\0';
        int wd = inotify_add_watch(w->fd, dir[0] ? dir : "/", DIR_EVENTS);
        if (wd < 0)
                return -errno;

        struct watched_file *files = realloc(w->files, (w->n + 1) * sizeof *files);
        if (!files)
                return -ENOMEM;
        w->files = files;
        char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        files[w->n++] = (struct watched_file){
                .path = copy,
                .name = copy + (slash - dir) + 1,
                .wd = wd,
                .absent = !st,
                .mapped = mapped,
                .id = st ? file_identity_of(st) : (struct file_identity){ 0 },
        };
        return 0;
}

int file_watch_add(struct file_watch *w, const char *path) {
        struct stat st;
        if (stat(path, &st) < 0)
                return -errno;
        return add_entry(w, path, &st, false);
}

int file_watch_add_missing(struct file_watch *w, const char *path) {
        if (access(path, F_OK) == 0)
                return 1;
        return add_entry(w, path, NULL, false);
}

static bool is_mapped(const struct file_watch *w, const struct stat *st) {
        for (size_t i = 0; i < w->n; i++)
                if (w->files[i].mapped && w->files[i].id.dev == st->st_dev && w->files[i].id.ino == st->st_ino)
                        return true;
        return false;
}

int file_watch_add_links(struct file_watch *w, const char *path) {
        struct stat st;
        if (stat(path, &st) < 0)
                return -errno;
        /* Each name on the way names the file at the end: a change to any one is a change. */
        char name[PATH_MAX], target[PATH_MAX];
        snprintf(name, sizeof name, "%s", path);
        for (unsigned hops = 0; hops < 40; hops++) { /* the kernel's own limit, ELOOP */
                int r = add_entry(w, name, &st, false);
                if (r < 0)
                        return r;
                ssize_t len = readlink(name, target, sizeof target - 1);
                if (len < 0) /* the file itself: the end */
                        break;
                target[len] = '\0';
                char *slash = strrchr(name, '/');
                if (target[0] == '/' || !slash)
                        snprintf(name, sizeof name, "%s", target);
                else if (snprintf(slash + 1, sizeof name - (size_t) (slash + 1 - name), "%s", target) >=
                         (int) (sizeof name - (size_t) (slash + 1 - name)))
                        return -ENAMETOOLONG;
        }
        /* Loaded from it, yet it names another file: changed since the loader opened it. */
        return is_mapped(w, &st) ? 0 : 1;
}

static bool under(const char *path, const char *dir) {
        size_t n = strlen(dir);
        return dir[0] && strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* One line of /proc/self/maps: the mapped file's device, inode and path, if it maps a file. */
static bool parse_map_line(char *line, dev_t *dev, ino_t *ino, char **path) {
        unsigned major, minor;
        unsigned long inode;
        int n = 0;
        if (sscanf(line, "%*s %*s %*s %x:%x %lu %n", &major, &minor, &inode, &n) != 3 || n == 0 || inode == 0)
                return false;
        char *p = line + n;
        p[strcspn(p, "\n")] = '\0';
        /* A memfd (the daemon's launch counts) has no name on disk that could change. */
        if (p[0] != '/' || strncmp(p, "/memfd:", 7) == 0)
                return false;
        *dev = makedev(major, minor);
        *ino = (ino_t) inode;
        *path = p;
        return true;
}

int file_watch_init(struct file_watch *w, const char *skip_dir, char **ret_changed) {
        *w = (struct file_watch){ .fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK) };
        *ret_changed = NULL;
        if (w->fd < 0)
                return -errno;
        char exe[PATH_MAX];
        ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[len > 0 ? len : 0] = '\0';

        _cleanup_fclose_ FILE *f = fopen("/proc/self/maps", "re");
        if (!f)
                return -errno;
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        int r = 0;
        while (r >= 0 && getline(&line, &cap, f) > 0) {
                dev_t dev;
                ino_t ino;
                char *path;
                if (!parse_map_line(line, &dev, &ino, &path) || strcmp(path, exe) == 0 || under(path, skip_dir) ||
                    watching(w, path))
                        continue;
                struct stat st;
                bool replaced = strstr(path, " (deleted)") || stat(path, &st) < 0 || st.st_dev != dev ||
                                st.st_ino != ino;
                if (replaced) {
                        if (!*ret_changed)
                                *ret_changed = strdup(path);
                        continue;
                }
                r = add_entry(w, path, &st, true);
        }
        return r;
}

/* Whether the file path names now is not the one f expects. mask: the event's, 0 for none. */
static bool changed(const struct watched_file *f, uint32_t mask) {
        struct stat st;
        /* Gone for now: an update may be about to put the new file in place. */
        if (stat(f->path, &st) < 0)
                return false;
        /* Created to be written: its writer's close (IN_CLOSE_WRITE) says when it is whole. A new
         * symlink or hard link is whole at once. */
        struct stat lst;
        if (mask == IN_CREATE && lstat(f->path, &lst) == 0 && S_ISREG(lst.st_mode) && lst.st_nlink == 1)
                return false;
        return f->absent || !file_identity_matches(&f->id, &st);
}

static const char *check(struct file_watch *w, int wd, const char *name, uint32_t mask) {
        for (size_t i = 0; i < w->n; i++) {
                struct watched_file *f = &w->files[i];
                if ((wd >= 0 && (f->wd != wd || strcmp(f->name, name) != 0)))
                        continue;
                if (changed(f, mask))
                        return f->path;
        }
        return NULL;
}

const char *file_watch_read(struct file_watch *w) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        const char *found = NULL;
        ssize_t n;
        while ((n = read(w->fd, buf, sizeof buf)) > 0) {
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;
                        if (ev->mask & IN_Q_OVERFLOW)
                                found = found ? found : check(w, -1, NULL, 0);
                        else if (ev->len > 0 && !found)
                                found = check(w, ev->wd, ev->name, ev->mask & DIR_EVENTS);
                        p += sizeof *ev + ev->len;
                }
        }
        return found;
}

void file_watch_done(struct file_watch *w) {
        for (size_t i = 0; i < w->n; i++)
                free(w->files[i].path);
        free(w->files);
        if (w->fd >= 0)
                close(w->fd);
        *w = (struct file_watch){ .fd = -1 };
}
