/* SPDX-License-Identifier: MIT */
/* What a zygote's epoll set holds: each event's data points at a struct watch, the first member of
 * what it watches (a connection, a child) or one of the server's own. */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>

enum watch_kind { WATCH_LISTEN, WATCH_SIGNAL, WATCH_CONN, WATCH_CHILD, WATCH_CONTROL, WATCH_FILES, WATCH_PREPARED,
                  WATCH_DISPLAY };

struct watch {
        enum watch_kind kind;
};

static inline int watch_fd(int epoll_fd, int fd, struct watch *w, uint32_t events) {
        struct epoll_event ev = { .events = events, .data.ptr = w };
        return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}
