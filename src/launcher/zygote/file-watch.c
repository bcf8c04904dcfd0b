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

static bool same(const struct watched_file *f, const struct stat *st) {
        return f->dev == st->st_dev && f->ino == st->st_ino && f->size == st->st_size &&
               f->mtime.tv_sec == st->st_mtim.tv_sec && f->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static bool watching(const struct file_watch *w, const char *path) {
        for (size_t i = 0; i < w->n; i++)
                if (strcmp(w->files[i].path, path) == 0)
                        return true;
        return false;
}

int file_watch_add(struct file_watch *w, const char *path) {
        if (watching(w, path))
                return 0;
        struct stat st;
        if (stat(path, &st) < 0)
                return -errno;
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
                .dev = st.st_dev,
                .ino = st.st_ino,
                .size = st.st_size,
                .mtime = st.st_mtim,
        };
        return 0;
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
                r = file_watch_add(w, path);
        }
        return r;
}

static const char *check(struct file_watch *w, int wd, const char *name) {
        for (size_t i = 0; i < w->n; i++) {
                struct watched_file *f = &w->files[i];
                if ((wd >= 0 && (f->wd != wd || strcmp(f->name, name) != 0)))
                        continue;
                struct stat st;
                /* Gone for now: an update may be about to put the new file in place. */
                if (stat(f->path, &st) == 0 && !same(f, &st))
                        return f->path;
        }
        return NULL;
}

const char *file_watch_read(struct file_watch *w) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        const char *changed = NULL;
        ssize_t n;
        while ((n = read(w->fd, buf, sizeof buf)) > 0) {
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;
                        if (ev->mask & IN_Q_OVERFLOW)
                                changed = changed ? changed : check(w, -1, NULL);
                        else if (ev->len > 0 && !changed)
                                changed = check(w, ev->wd, ev->name);
                        p += sizeof *ev + ev->len;
                }
        }
        return changed;
}

void file_watch_done(struct file_watch *w) {
        for (size_t i = 0; i < w->n; i++)
                free(w->files[i].path);
        free(w->files);
        if (w->fd >= 0)
                close(w->fd);
        *w = (struct file_watch){ .fd = -1 };
}
