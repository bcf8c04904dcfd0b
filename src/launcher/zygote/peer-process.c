/* SPDX-License-Identifier: MIT */
#include "peer-process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

/* asm-generic/socket.h of Linux 6.5 (x86-64 and aarch64 alike), which Debian 12's headers predate:
 * without it, a build there never asked the kernel for the peer's pidfd, even on a kernel that has it. */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

int peer_socket_inode(int fd, ino_t *ret) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        _cleanup_close_ int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
        if (nl < 0)
                return -errno;
        struct {
                struct nlmsghdr header;
                struct unix_diag_req req;
        } ask = {
                .header = { .nlmsg_len = sizeof ask, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST },
                .req = { .sdiag_family = AF_UNIX,
                         .udiag_states = ~0u,
                         .udiag_ino = (unsigned) st.st_ino,
                         .udiag_show = UDIAG_SHOW_PEER,
                         .udiag_cookie = { ~0u, ~0u } }, /* any socket of that inode (INET_DIAG_NOCOOKIE) */
        };
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        if (sendto(nl, &ask, sizeof ask, 0, (struct sockaddr *) &kernel, sizeof kernel) != (ssize_t) sizeof ask)
                return -errno;
        union {
                struct nlmsghdr header;
                char bytes[1024];
        } answer;
        ssize_t n = recv(nl, &answer, sizeof answer, 0);
        const struct nlmsghdr *h = &answer.header;
        if (n < 0)
                return -errno;
        if (!NLMSG_OK(h, (size_t) n))
                return -EBADMSG;
        if (h->nlmsg_type == NLMSG_ERROR && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                return e->error < 0 ? e->error : -EBADMSG; /* -ENOENT: no Unix socket diagnostics */
        }
        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
                return -EBADMSG;
        const struct unix_diag_msg *msg = NLMSG_DATA(h);
        const char *at = (const char *) msg + NLMSG_ALIGN(sizeof *msg), *end = (const char *) h + h->nlmsg_len;
        while (msg->udiag_ino == (unsigned) st.st_ino && end - at >= NLA_HDRLEN) {
                const struct nlattr *a = (const void *) at;
                if (a->nla_len < NLA_HDRLEN || a->nla_len > end - at)
                        break;
                if (a->nla_type == UNIX_DIAG_PEER && a->nla_len >= NLA_HDRLEN + sizeof(uint32_t)) {
                        uint32_t peer;
                        memcpy(&peer, at + NLA_HDRLEN, sizeof peer);
                        *ret = (ino_t) peer;
                        return 0;
                }
                at += NLA_ALIGN(a->nla_len);
        }
        return -ENOTCONN;
}

bool process_holds_socket(pid_t pid, ino_t socket_inode) {
        char path[64], want[64], link[64];
        snprintf(path, sizeof path, "/proc/%d/fd", (int) pid);
        snprintf(want, sizeof want, "socket:[%llu]", (unsigned long long) socket_inode);
        DIR *d = opendir(path);
        if (!d)
                return false;
        bool found = false;
        struct dirent *de;
        while (!found && (de = readdir(d))) {
                ssize_t n = readlinkat(dirfd(d), de->d_name, link, sizeof link - 1);
                found = n > 0 && (size_t) n == strlen(want) && memcmp(link, want, (size_t) n) == 0;
        }
        closedir(d);
        return found;
}

/* A kernel that cannot say which socket is at the other end: none built with Unix socket diagnostics
 * (CONFIG_UNIX_DIAG), or qemu-user, which passes no such netlink socket through. */
static bool cannot_tell(int r) {
        return r == -ENOENT || r == -EPROTONOSUPPORT || r == -EAFNOSUPPORT;
}

int peer_process_open_by_pid(int fd, pid_t pid) {
        _cleanup_close_ int pidfd = pidfd_open(pid, 0);
        if (pidfd < 0)
                return -1;
        ino_t peer;
        int r = peer_socket_inode(fd, &peer);
        /* Without a way to tell, the pid alone, as before (docs/limitations.md). Else it must be held
         * now, with the pidfd open: if that process is still alive once its state has been read
         * (client-context.c checks), the pid was its own all along. */
        if (!cannot_tell(r) && (r < 0 || !process_holds_socket(pid, peer)))
                return -1;
        return TAKE_FD(pidfd);
}

int peer_process_open(int fd, pid_t *ret_pid) {
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0)
                return -1;
        *ret_pid = cred.pid;
        int pidfd;
        len = sizeof pidfd;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0)
                return pidfd;
        return peer_process_open_by_pid(fd, cred.pid);
}

void peer_process_setup(int listen_fd) {
        int pidfd;
        socklen_t len = sizeof pidfd;
        if (getsockopt(listen_fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0)
                close(pidfd);
        else if (errno == ENOPROTOOPT) {
                ino_t none;
                (void) peer_socket_inode(listen_fd, &none);
        }
}
