/* SPDX-License-Identifier: MIT */
#include "control.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>

int control_send(int fd, const char *format, ...) {
        char buf[CONTROL_MAX];
        va_list ap;
        va_start(ap, format);
        int n = vsnprintf(buf, sizeof buf, format, ap);
        va_end(ap);
        if (n < 0)
                return -EINVAL;
        size_t len = (size_t) n < sizeof buf ? (size_t) n : sizeof buf - 1;
        return send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 ? -errno : 0;
}

ssize_t control_recv(int fd, char buf[static CONTROL_MAX]) {
        ssize_t n;
        do
                n = recv(fd, buf, CONTROL_MAX - 1, MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return n;
}
