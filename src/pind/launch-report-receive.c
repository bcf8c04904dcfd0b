/* SPDX-License-Identifier: MIT */
#include "launch-report-receive.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "launch-users.h"
#include "log.h"
#include "macro.h"

/* The daemon's file, whose processes alone may report. */
static char daemon_path[PATH_MAX];

/* headstartd in our own folder: they are installed (and built) side by side. */
static int daemon_beside_us(void) {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n < 0)
                return -errno;
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (!slash)
                return -EINVAL;
        *slash = '\0';
        return snprintf(daemon_path, sizeof daemon_path, "%s/headstartd", self) < (int) sizeof daemon_path ? 0
                                                                                                        : -ENAMETOOLONG;
}

int launch_reports_listen(const char *path, const char *daemon) {
        if (daemon && strlen(daemon) >= sizeof daemon_path)
                return log_error("--daemon: the path is too long: %s", daemon), -ENAMETOOLONG;
        if (daemon)
                strcpy(daemon_path, daemon);
        else if (daemon_beside_us() < 0)
                return log_warning("cannot find our own folder: launches served by headstartd are not counted"), -ENOENT;
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
        int on = 1;
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || chmod(path, 0666) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0)
                return log_warning_errno(errno, "cannot listen on %s: launches served by headstartd are not counted",
                                         path);
        return TAKE_FD(fd);
}

/* Whether process pid runs the daemon's file: any user may write to the socket, but a report counts
 * only from a headstartd, whose reports are launches it served, as an exec of the program would be
 * (which fanotify counts from any user too). After an upgrade replaced the file, the daemons still
 * running it report until they restart. */
static bool sent_by_daemon(pid_t pid) {
        char link[64], exe[PATH_MAX + 16];
        snprintf(link, sizeof link, "/proc/%d/exe", (int) pid);
        ssize_t n = readlink(link, exe, sizeof exe - 1);
        if (n < 0)
                return false;
        exe[n] = '\0';
        size_t len = strlen(daemon_path);
        return strncmp(exe, daemon_path, len) == 0 && (exe[len] == '\0' || strcmp(exe + len, " (deleted)") == 0);
}

int launch_reports_read(int fd, dev_t *ret_dev, ino_t *ret_ino) {
        char buf[PATH_MAX + 1];
        union {
                struct cmsghdr header;
                char room[CMSG_SPACE(sizeof(struct ucred))];
        } control;
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof buf - 1 };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof control };
        ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        struct ucred sender;
        if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_CREDENTIALS)
                return 0;
        memcpy(&sender, CMSG_DATA(c), sizeof sender);
        if (!sent_by_daemon(sender.pid) || !launch_user_counts(sender.uid))
                return 0;
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
