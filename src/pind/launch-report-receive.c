/* SPDX-License-Identifier: MIT */
#include "launch-report-receive.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"

int launch_reports_listen(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof sa.sun_path)
                return log_error("--launch-socket: the path is too long for a socket: %s", path), -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_warning_errno(errno, "socket");
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
                (void) unlink(path); /* left by an earlier run */
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || chmod(path, 0666) < 0)
                return log_warning_errno(errno, "cannot listen on %s: launches served by headstartd are not counted",
                                         path);
        return TAKE_FD(fd);
}

int launch_reports_read(int fd, dev_t *ret_dev, ino_t *ret_ino) {
        char buf[PATH_MAX + 1];
        ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        struct stat st;
        /* A path, not trusted further than this: it only ever raises the count of a program that
         * the plan names (launch_counts_add matches by inode). */
        if (buf[0] != '/' || stat(buf, &st) < 0)
                return 0;
        *ret_dev = st.st_dev;
        *ret_ino = st.st_ino;
        return 1;
}
