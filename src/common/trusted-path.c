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
static int at_root(struct stat *st, char *done, uid_t owner, char *why, size_t why_size) {
        if (lstat("/", st) < 0)
                return -errno;
        strcpy(done, "/");
        return judge(st, done, owner, why, why_size);
}

/* Replaces what is left to walk (todo from at) with the target of the link at `link`, followed by it. */
static int follow(const char *link, char **todo, size_t *at, bool *absolute) {
        char target[PATH_MAX];
        ssize_t n = readlink(link, target, sizeof target);
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
 * links; ret is the stat of the file it leads to. Each component is looked at by its whole path as
 * the walk has resolved it: a component that passed is one only owner or root can change, so what
 * is below it cannot be swapped by anyone else between two looks. (By absolute paths rather than
 * from directory fds: under qemu-user with QEMU_LD_PREFIX, "/" opened alone is the emulated root,
 * while the dynamic loader finds the files the daemon loads by their absolute paths.) */
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
        struct stat cur; /* of done: a directory while components are left, else the file reached */
        int r = at_root(&cur, done, owner, why, why_size);
        if (r < 0)
                return r;
        unsigned links = 0;
        size_t at = 0;
        for (;;) {
                at += strspn(todo + at, "/");
                if (!todo[at])
                        break;
                size_t len = strcspn(todo + at, "/");
                if (len > NAME_MAX)
                        return -ENAMETOOLONG;
                char name[NAME_MAX + 1];
                memcpy(name, todo + at, len);
                name[len] = '\0';
                at += len;
                if (strcmp(name, ".") == 0)
                        continue;
                if (!S_ISDIR(cur.st_mode))
                        return -ENOTDIR;
                char next[PATH_MAX];
                strcpy(next, done);
                if (strcmp(name, "..") == 0)
                        path_pop(next);
                else if ((r = path_push(next, name, len)) < 0)
                        return r;
                struct stat st;
                if (lstat(next, &st) < 0)
                        return -errno;
                if (S_ISLNK(st.st_mode)) {
                        /* Whoever made the link chose where it leads: in a sticky folder that could
                         * be another user. Then where it leads is walked and judged. */
                        if ((r = judge(&st, next, owner, why, why_size)) < 0)
                                return r;
                        bool absolute = false;
                        if (++links > MAX_LINKS)
                                return -ELOOP;
                        if ((r = follow(next, &todo, &at, &absolute)) < 0)
                                return r;
                        if (absolute && (r = at_root(&cur, done, owner, why, why_size)) < 0)
                                return r;
                        continue;
                }
                if ((r = judge(&st, next, owner, why, why_size)) < 0)
                        return r;
                strcpy(done, next);
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
