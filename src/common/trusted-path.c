/* SPDX-License-Identifier: MIT */
#include "trusted-path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

/* As many links as the kernel follows in one lookup. */
#define MAX_LINKS 40

static int judge(const struct stat *st, const char *name, uid_t owner, char *why, size_t why_size) {
        if (st->st_uid != owner && st->st_uid != 0) {
                snprintf(why, why_size, "%s is owned by uid %u, neither root nor uid %u", name, (unsigned) st->st_uid,
                         (unsigned) owner);
                return -EPERM;
        }
        /* A sticky folder of root's, like /tmp: others may add names to it, but not remove or
         * rename ours, and every name below it is judged here by its owner (a name another user
         * made first is theirs, and refused). */
        if (S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX) && st->st_uid == 0)
                return 0;
        /* Group-writable counts too: who is in the group is not ours to know. */
        if (!S_ISLNK(st->st_mode) && (st->st_mode & (S_IWGRP | S_IWOTH))) {
                snprintf(why, why_size, "%s is writable by %s (mode %04o)", name,
                         st->st_mode & S_IWOTH ? "other users" : "its group", (unsigned) (st->st_mode & 07777));
                return -EPERM;
        }
        return 0;
}

/* The walked path, for messages: appends a component, or drops the last one for "..". */
static int path_push(char *done, const char *name, size_t len) {
        size_t n = strlen(done);
        if (n + 1 + len >= PATH_MAX)
                return -ENAMETOOLONG;
        if (n > 1)
                done[n++] = '/';
        memcpy(done + n, name, len);
        done[n + len] = '\0';
        return 0;
}

static void path_pop(char *done) {
        char *slash = strrchr(done, '/');
        slash[slash == done] = '\0'; /* "/a/b" to "/a", "/a" to "/" */
}

/* Starts again at "/", which is judged like any other directory. */
static int open_root(int *dir, struct stat *st, char *done, uid_t owner, char *why, size_t why_size) {
        closep(dir);
        *dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (*dir < 0 || fstat(*dir, st) < 0)
                return -errno;
        strcpy(done, "/");
        return judge(st, done, owner, why, why_size);
}

/* Replaces what is left to walk (todo from at) with the link's target followed by it. */
static int follow(int link, char **todo, size_t *at, bool *absolute) {
        char target[PATH_MAX];
        ssize_t n = readlinkat(link, "", target, sizeof target);
        if (n < 0)
                return -errno;
        if (n == 0)
                return -ENOENT;
        if ((size_t) n >= sizeof target)
                return -ENAMETOOLONG;
        char *rest;
        if (asprintf(&rest, "%.*s/%s", (int) n, target, *todo + *at) < 0)
                return -ENOMEM;
        free(*todo);
        *todo = rest;
        *at = 0;
        *absolute = target[0] == '/';
        return 0;
}

/* Walks path one component at a time from "/", judging each directory and the file, following
 * links; ret is the stat of the file it leads to. */
static int walk(const char *path, uid_t owner, char *why, size_t why_size, struct stat *ret) {
        if (!path || !*path)
                return -EINVAL;
        _cleanup_free_ char *todo = NULL;
        if (path[0] == '/')
                todo = strdup(path);
        else {
                char cwd[PATH_MAX];
                if (!getcwd(cwd, sizeof cwd))
                        return -errno;
                if (asprintf(&todo, "%s/%s", cwd, path) < 0)
                        todo = NULL;
        }
        if (!todo)
                return -ENOMEM;

        char done[PATH_MAX];
        _cleanup_close_ int dir = -1;
        struct stat cur; /* of dir: a directory while components are left, else the file reached */
        int r = open_root(&dir, &cur, done, owner, why, why_size);
        if (r < 0)
                return r;
        unsigned links = 0;
        size_t at = 0;
        for (;;) {
                at += strspn(todo + at, "/");
                if (!todo[at])
                        break;
                size_t len = strcspn(todo + at, "/");
                char name[NAME_MAX + 1];
                if (len > NAME_MAX)
                        return -ENAMETOOLONG;
                memcpy(name, todo + at, len);
                name[len] = '\0';
                at += len;
                if (strcmp(name, ".") == 0)
                        continue;
                if (!S_ISDIR(cur.st_mode))
                        return -ENOTDIR;
                _cleanup_close_ int fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0)
                        return -errno;
                if (S_ISLNK(st.st_mode)) {
                        /* Whoever made the link chose where it leads: in a sticky folder that could
                         * be another user. Then where it leads is walked and judged. */
                        char link_name[PATH_MAX + NAME_MAX + 2];
                        snprintf(link_name, sizeof link_name, "%s%s%s", done, strcmp(done, "/") ? "/" : "", name);
                        if ((r = judge(&st, link_name, owner, why, why_size)) < 0)
                                return r;
                        bool absolute = false;
                        if (++links > MAX_LINKS)
                                return -ELOOP;
                        if ((r = follow(fd, &todo, &at, &absolute)) < 0)
                                return r;
                        if (absolute && (r = open_root(&dir, &cur, done, owner, why, why_size)) < 0)
                                return r;
                        continue;
                }
                if (strcmp(name, "..") == 0)
                        path_pop(done);
                else if ((r = path_push(done, name, len)) < 0)
                        return r;
                if ((r = judge(&st, done, owner, why, why_size)) < 0)
                        return r;
                closep(&dir);
                dir = TAKE_FD(fd);
                cur = st;
        }
        *ret = cur;
        return 0;
}

int trusted_path_check(const char *path, uid_t owner, char *why, size_t why_size) {
        struct stat st;
        return walk(path, owner, why, why_size, &st);
}

int trusted_path_check_fd(int fd, const char *path, uid_t owner, char *why, size_t why_size) {
        struct stat opened, found;
        if (fstat(fd, &opened) < 0)
                return -errno;
        int r = walk(path, owner, why, why_size, &found);
        if (r < 0)
                return r;
        if (opened.st_dev != found.st_dev || opened.st_ino != found.st_ino) {
                snprintf(why, why_size, "%s is not the file that was opened (replaced meanwhile)", path);
                return -EPERM;
        }
        return judge(&opened, path, owner, why, why_size);
}

const char *trusted_path_refusal(const char *path, char *buf, size_t size) {
        int r = trusted_path_check(path, geteuid(), buf, size);
        if (r == 0)
                return NULL;
        if (r != -EPERM)
                snprintf(buf, size, "%s cannot be checked: %s", path, strerror(-r));
        return buf;
}
