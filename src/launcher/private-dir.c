/* SPDX-License-Identifier: MIT */
#include "private-dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

int private_dir_open(const char *path, const char **ret_why) {
        *ret_why = NULL;
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return -errno;
        /* O_NOFOLLOW: a symlink planted where the directory should be would send our files, and
         * what we load from them, wherever its owner wants. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOTDIR || errno == ELOOP) {
                        *ret_why = "it is not a directory (or is a symlink)";
                        return -EPERM;
                }
                return -errno;
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_uid != geteuid())
                *ret_why = "it belongs to another user";
        else if (st.st_mode & (S_IWGRP | S_IWOTH))
                *ret_why = "it is writable by other users (chmod 700 it)";
        return *ret_why ? -EPERM : TAKE_FD(fd);
}

int private_file_replace(const char *path, int (*fill)(int fd, const void *data), const void *data) {
        char temp[PATH_MAX + 32];
        snprintf(temp, sizeof temp, "%s.tmp-%d", path, (int) getpid());
        _cleanup_close_ int fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        int r = fill(fd, data);
        if (r >= 0 && rename(temp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(temp);
        return r < 0 ? r : 0;
}

int private_file_open(const char *path, const char **ret_why) {
        *ret_why = NULL;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0) {
                int r = -errno;
                if (r != -ENOENT)
                        *ret_why = strerror(errno);
                return r;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                *ret_why = "not a regular file";
        else if (st.st_uid != geteuid())
                *ret_why = "owned by another user";
        else if (st.st_mode & (S_IWGRP | S_IWOTH))
                *ret_why = "writable by other users";
        return *ret_why ? -EPERM : TAKE_FD(fd);
}
