/* SPDX-License-Identifier: MIT */
#include "systemd.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "macro.h"

#define SD_LISTEN_FDS_START 3

int systemd_listen_fd(void) {
        const char *pid = getenv("LISTEN_PID");
        const char *fds = getenv("LISTEN_FDS");
        int r = -ENOENT;

        if (pid && fds && strtol(pid, NULL, 10) == (long) getpid() && strtol(fds, NULL, 10) >= 1) {
                int listening = 0;
                socklen_t len = sizeof listening;
                r = SD_LISTEN_FDS_START;
                if (getsockopt(r, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening)
                        r = -ENOTSOCK;
                else if (fcntl(r, F_SETFD, FD_CLOEXEC) < 0)
                        r = -errno;
        }
        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_FDNAMES");
        return r;
}

int systemd_notify(const char *state) {
        const char *path = getenv("NOTIFY_SOCKET");
        if (!path || !*path)
                return 0;

        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t len = strlen(path);
        if ((path[0] != '/' && path[0] != '@') || len >= sizeof sa.sun_path)
                return -EINVAL;
        memcpy(sa.sun_path, path, len);
        if (sa.sun_path[0] == '@')
                sa.sun_path[0] = '\0'; /* abstract namespace */

        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        socklen_t salen = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len);
        if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *) &sa, salen) < 0)
                return -errno;
        return 0;
}
