/* SPDX-License-Identifier: MIT */
#include "listen.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "private-dir.h"
#include "trusted-path.h"

/* The directory holds the socket, so its mode is what keeps other users out (alongside the
 * SO_PEERCRED check). The folders above it are judged as the daemon's trusted files are: one that
 * another user may write to lets them move ours aside and put a socket of theirs at its path, to
 * which our clients would send their launches. */
static int ensure_private_dir(const char *socket_path) {
        _cleanup_free_ char *copy = strdup(socket_path);
        if (!copy)
                return -ENOMEM;
        const char *dir = dirname(copy), *why;
        int fd = private_dir_open(dir, &why);
        if (fd == -EPERM)
                return log_error("cannot use %s: %s; pick another --socket", dir, why), -EPERM;
        if (fd < 0)
                return log_error_errno(fd, "cannot create or open %s", dir);
        close(fd);
        char buf[PATH_MAX + 100];
        why = trusted_path_refusal(dir, buf, sizeof buf);
        if (why)
                return log_error("cannot use %s: %s; pick another --socket", dir, why), -EPERM;
        return 0;
}

static int fill_address(const char *path, struct sockaddr_un *sa) {
        *sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof sa->sun_path)
                return -ENAMETOOLONG;
        strcpy(sa->sun_path, path);
        return 0;
}

/* An existing socket file is either a running daemon (refuse) or left over from one (remove). */
static int remove_stale(const struct sockaddr_un *sa) {
        struct stat st;
        if (lstat(sa->sun_path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISSOCK(st.st_mode))
                return log_error("%s exists and is not a socket; remove it or pick another --socket", sa->sun_path),
                       -EEXIST;
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *) sa, sizeof *sa) == 0)
                return log_error("another headstartd already listens on %s", sa->sun_path), -EADDRINUSE;
        if (unlink(sa->sun_path) < 0)
                return log_error_errno(errno, "cannot remove the stale socket %s", sa->sun_path);
        return 0;
}

int listen_open(const char *path) {
        struct sockaddr_un sa;
        if (fill_address(path, &sa) < 0)
                return log_error("socket path too long: %s", path), -ENAMETOOLONG;
        int r = ensure_private_dir(path);
        if (r < 0)
                return r;
        r = remove_stale(&sa);
        if (r < 0)
                return r;

        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_error_errno(errno, "socket");
        mode_t old = umask(0077);
        r = bind(fd, (struct sockaddr *) &sa, sizeof sa);
        umask(old);
        if (r < 0)
                return log_error_errno(errno, "cannot bind %s", path);
        if (listen(fd, SOMAXCONN) < 0)
                return log_error_errno(errno, "cannot listen on %s", path);
        return TAKE_FD(fd);
}
