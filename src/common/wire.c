/* SPDX-License-Identifier: MIT */
#include "wire.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

void hs_close_fds(int *fds, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (fds[i] >= 0) {
                        close(fds[i]);
                        fds[i] = -1;
                }
}

int hs_send_message(int sock, enum hs_message_type type, const void *payload, size_t size, const int *fds,
                    size_t nfds, int nonblock) {
        struct hs_header h;
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * HS_MAX_FDS)];
        } control;

        if (size > HS_MAX_PAYLOAD || nfds > HS_MAX_FDS)
                return -EMSGSIZE;
        hs_header_init(&h, type, (uint32_t) size);

        struct iovec iov[2] = {
                { .iov_base = &h, .iov_len = sizeof h },
                { .iov_base = (void *) payload, .iov_len = size },
        };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = size > 0 ? 2 : 1 };
        if (nfds > 0) {
                memset(&control, 0, sizeof control);
                mh.msg_control = control.buf;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
        }

        int flags = MSG_NOSIGNAL | (nonblock ? MSG_DONTWAIT : 0);
        size_t left = sizeof h + size;
        while (left > 0) {
                ssize_t n = sendmsg(sock, &mh, flags);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                left -= (size_t) n;
                /* The fds went with the first bytes; advance the iovecs past what was written. */
                mh.msg_control = NULL;
                mh.msg_controllen = 0;
                while (n > 0) {
                        size_t step = (size_t) n < mh.msg_iov->iov_len ? (size_t) n : mh.msg_iov->iov_len;
                        mh.msg_iov->iov_base = (char *) mh.msg_iov->iov_base + step;
                        mh.msg_iov->iov_len -= step;
                        n -= (ssize_t) step;
                        if (mh.msg_iov->iov_len == 0 && mh.msg_iovlen > 1) {
                                mh.msg_iov++;
                                mh.msg_iovlen--;
                        }
                }
        }
        return 0;
}

int hs_send_reason(int sock, enum hs_message_type type, int code, const char *text) {
        char buf[sizeof(struct hs_reason) + HS_MAX_TEXT];
        struct hs_reason r = { .code = code };
        size_t len = strnlen(text, HS_MAX_TEXT);
        memcpy(buf, &r, sizeof r);
        memcpy(buf + sizeof r, text, len);
        return hs_send_message(sock, type, buf, sizeof r + len, NULL, 0, 1);
}

ssize_t hs_recv_some(int sock, void *buf, size_t len, int *fds, size_t max_fds, size_t *nfds) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * HS_MAX_FDS)];
        } control;
        struct iovec iov = { .iov_base = buf, .iov_len = len };
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = control.buf,
                .msg_controllen = sizeof control.buf,
        };
        ssize_t n;

        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;

        int r = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                int got[HS_MAX_FDS];
                memcpy(got, CMSG_DATA(c), k * sizeof(int));
                for (size_t i = 0; i < k; i++) {
                        if (*nfds < max_fds)
                                fds[(*nfds)++] = got[i];
                        else {
                                close(got[i]);
                                r = -EMSGSIZE;
                        }
                }
        }
        if (mh.msg_flags & MSG_CTRUNC)
                r = -EMSGSIZE;
        return r < 0 ? r : n;
}

static int recv_exact(int sock, void *buf, size_t len, int *fds, size_t max_fds, size_t *nfds) {
        size_t got = 0;
        while (got < len) {
                ssize_t n = hs_recv_some(sock, (char *) buf + got, len - got, fds, max_fds, nfds);
                if (n < 0)
                        return (int) n;
                if (n == 0)
                        return -ECONNRESET;
                got += (size_t) n;
        }
        return 0;
}

static int recv_header(int sock, struct hs_header *h, int *fds, size_t max_fds, size_t *nfds) {
        int r = recv_exact(sock, h, sizeof *h, fds, max_fds, nfds);
        return r < 0 ? r : hs_header_check(h);
}

int hs_recv_message(int sock, struct hs_header *ret_header, void *payload, size_t max, int *fds,
                    size_t max_fds, size_t *nfds) {
        struct hs_header h;
        int r = recv_header(sock, &h, fds, max_fds, nfds);
        if (r < 0)
                return r;
        if (h.size > max)
                return -EMSGSIZE;
        r = recv_exact(sock, payload, h.size, fds, max_fds, nfds);
        if (r < 0)
                return r;
        *ret_header = h;
        return 0;
}

int hs_recv_message_alloc(int sock, struct hs_header *ret_header, void **ret_payload, int *fds, size_t max_fds,
                          size_t *nfds) {
        struct hs_header h;
        int r = recv_header(sock, &h, fds, max_fds, nfds);
        if (r < 0)
                return r;
        void *payload = malloc(h.size ? h.size : 1);
        if (!payload)
                return -ENOMEM;
        r = recv_exact(sock, payload, h.size, fds, max_fds, nfds);
        if (r < 0) {
                free(payload);
                return r;
        }
        *ret_header = h;
        *ret_payload = payload;
        return 0;
}

static int64_t monotonic_ms(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (int64_t) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int hs_wait_readable(int sock, int timeout_ms) {
        struct pollfd p = { .fd = sock, .events = POLLIN };
        /* A deadline, not a wait begun again after each signal: a caller with a timer (a home
         * screen's) would never see a stopped daemon time out. */
        int64_t deadline = timeout_ms < 0 ? -1 : monotonic_ms() + timeout_ms;
        for (;;) {
                int64_t now = deadline < 0 ? 0 : monotonic_ms();
                int left = deadline < 0 ? -1 : (int) (deadline > now ? deadline - now : 0);
                int n = poll(&p, 1, left);
                if (n > 0)
                        return 0;
                if (n == 0)
                        return -ETIMEDOUT;
                if (errno != EINTR)
                        return -errno;
        }
}
