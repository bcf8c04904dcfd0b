/* SPDX-License-Identifier: MIT */
#include "wayland-watch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "wayland-frames.h"

/* What one read may take, and the fds one message may carry: the kernel's SCM_MAX_FD (253);
 * libwayland itself sends at most 28 per sendmsg. */
#define FLOW_BUFFER (64 * 1024)
#define MAX_FDS 253
/* Events handled per wayland_watch_shown(): a client drawing without pause cannot hold the caller. */
#define EVENTS_PER_CALL 64

/* One direction of a connection: what was read from `from` and is not yet written to `to`. The fds
 * that came with those bytes go out with their first byte, so never after the message using them
 * (libwayland queues received fds and takes them in order as messages need them). */
struct flow {
        uint8_t buf[FLOW_BUFFER];
        size_t off, len;
        int fds[MAX_FDS];
        int nfds;
};

struct link;
struct end {
        struct link *link; /* epoll's data: which connection, which side */
        int side;
};

enum { CLIENT, SERVER };

struct link {
        struct link *next;
        int fd[2];           /* the program's connection, ours to the compositor */
        struct end ends[2];
        struct flow flows[2]; /* flows[CLIENT]: read from the program (requests); flows[SERVER]: events */
        struct wl_frames frames;
};

struct wayland_watch {
        int epoll, listener;
        char dir[64], address[sizeof(((struct sockaddr_un *) 0)->sun_path)];
        struct sockaddr_un compositor;
        struct link *links;
        bool shown;
        char problem[256 + sizeof(((struct sockaddr_un *) 0)->sun_path)];
        char refused[sizeof(((struct wl_frames *) 0)->error)]; /* a protocol error since the reset */
};

/* One line on stderr, named after the program (launch-timer, window-shown). */
__attribute__((format(printf, 1, 2))) static void complain(const char *format, ...) {
        va_list ap;
        va_start(ap, format);
        fprintf(stderr, "%s: ", program_invocation_short_name);
        vfprintf(stderr, format, ap);
        va_end(ap);
}

/* Where libwayland's wl_display_connect(NULL) connects (WAYLAND_SOCKET aside, which names an fd
 * already connected, and which the programs are not given). */
static int compositor_address(struct sockaddr_un *ret) {
        const char *display = getenv("WAYLAND_DISPLAY");
        const char *runtime = getenv("XDG_RUNTIME_DIR");
        if (!display || !*display)
                display = "wayland-0";
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        int n;
        if (display[0] == '/')
                n = snprintf(a.sun_path, sizeof a.sun_path, "%s", display);
        else if (runtime && *runtime)
                n = snprintf(a.sun_path, sizeof a.sun_path, "%s/%s", runtime, display);
        else {
                complain("WAYLAND_DISPLAY '%s' is relative and XDG_RUNTIME_DIR is not set\n", display);
                return -1;
        }
        if (n < 0 || (size_t) n >= sizeof a.sun_path) {
                complain("the Wayland socket's path is too long: %s\n", display);
                return -1;
        }
        *ret = a;
        return 0;
}

static int connect_compositor(const struct sockaddr_un *a) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *) a, sizeof *a) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static int listen_on(struct wayland_watch *w) {
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !*tmp || strlen(tmp) > 32)
                tmp = "/tmp";
        snprintf(w->dir, sizeof w->dir, "%s/headstart-wayland-XXXXXX", tmp);
        if (!mkdtemp(w->dir)) {
                complain("cannot make a directory for the Wayland socket in %s: %s\n", tmp, strerror(errno));
                w->dir[0] = '\0';
                return -1;
        }
        snprintf(w->address, sizeof w->address, "%s/wayland-0", w->dir);
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        snprintf(a.sun_path, sizeof a.sun_path, "%s", w->address);
        w->listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (w->listener < 0 || bind(w->listener, (struct sockaddr *) &a, sizeof a) < 0 ||
            listen(w->listener, 128) < 0) {
                complain("cannot listen on %s: %s\n", w->address, strerror(errno));
                return -1;
        }
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
        return epoll_ctl(w->epoll, EPOLL_CTL_ADD, w->listener, &ev);
}

struct wayland_watch *wayland_watch_open(void) {
        struct wayland_watch *w = calloc(1, sizeof *w);
        if (!w)
                return NULL;
        w->listener = -1;
        w->epoll = epoll_create1(EPOLL_CLOEXEC);
        if (w->epoll < 0 || compositor_address(&w->compositor) < 0) {
                wayland_watch_close(w);
                return NULL;
        }
        /* Once now, so that a compositor not running is one clear line before any launch. */
        int fd = connect_compositor(&w->compositor);
        if (fd < 0) {
                complain("cannot connect to the Wayland compositor at %s: %s\n", w->compositor.sun_path,
                         strerror(-fd));
                wayland_watch_close(w);
                return NULL;
        }
        close(fd);
        if (listen_on(w) < 0) {
                wayland_watch_close(w);
                return NULL;
        }
        return w;
}

const char *wayland_watch_address(const struct wayland_watch *w) {
        return w->address;
}

int wayland_watch_fd(const struct wayland_watch *w) {
        return w->epoll;
}

const char *wayland_watch_problem(const struct wayland_watch *w) {
        return w->problem[0] ? w->problem : NULL;
}

const char *wayland_watch_refused(const struct wayland_watch *w) {
        return w->refused[0] ? w->refused : NULL;
}

static void close_fds(int *fds, int n) {
        for (int i = 0; i < n; i++)
                close(fds[i]);
}

static void link_free(struct link *l) {
        for (int side = 0; side < 2; side++) {
                close(l->fd[side]);
                close_fds(l->flows[side].fds, l->flows[side].nfds);
        }
        wl_frames_free(&l->frames);
        free(l);
}

static void link_remove(struct wayland_watch *w, struct link *l) {
        for (struct link **p = &w->links; *p; p = &(*p)->next)
                if (*p == l) {
                        *p = l->next;
                        break;
                }
        link_free(l); /* closing the fds takes them out of the epoll set */
}

static void accept_one(struct wayland_watch *w) {
        int client = accept4(w->listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (client < 0)
                return; /* EAGAIN, or the program gave up already: nothing to join */
        int server = connect_compositor(&w->compositor);
        struct link *l = server >= 0 ? calloc(1, sizeof *l) : NULL;
        if (!l) {
                /* The program sees its connection closed, as with no compositor at all. */
                snprintf(w->problem, sizeof w->problem, "cannot connect to the Wayland compositor at %s: %s",
                         w->compositor.sun_path, strerror(server < 0 ? -server : ENOMEM));
                close(client);
                if (server >= 0)
                        close(server);
                return;
        }
        (void) fcntl(server, F_SETFL, O_NONBLOCK);
        l->fd[CLIENT] = client;
        l->fd[SERVER] = server;
        for (int side = 0; side < 2; side++) {
                l->ends[side] = (struct end){ l, side };
                struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &l->ends[side] };
                (void) epoll_ctl(w->epoll, EPOLL_CTL_ADD, l->fd[side], &ev);
        }
        l->next = w->links;
        w->links = l;
}

/* Reads what `side` sent into its (empty) flow: 1 read, 0 nothing now, -1 the end or an error. */
static int flow_read(struct link *l, int side) {
        struct flow *f = &l->flows[side];
        union {
                struct cmsghdr h;
                char space[CMSG_SPACE(MAX_FDS * sizeof(int))];
        } control;
        struct iovec iov = { f->buf, sizeof f->buf };
        struct msghdr m = {
                .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof control
        };
        ssize_t n = recvmsg(l->fd[side], &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        int k = (int) ((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                        if (f->nfds + k > MAX_FDS)
                                return -1;
                        memcpy(f->fds + f->nfds, CMSG_DATA(c), (size_t) k * sizeof(int));
                        f->nfds += k;
                }
        if (n <= 0 || (m.msg_flags & MSG_CTRUNC))
                return -1; /* the end, an error, or fds lost on the way: the connection cannot go on */
        f->off = 0;
        f->len = (size_t) n;
        if (side == CLIENT)
                wl_frames_requests(&l->frames, f->buf, f->len);
        else
                wl_frames_events(&l->frames, f->buf, f->len);
        return 1;
}

/* Writes what `side`'s flow holds to the other side: 1 all of it, 0 some is left, -1 an error. */
static int flow_write(struct link *l, int side) {
        struct flow *f = &l->flows[side];
        while (f->off < f->len) {
                union {
                        struct cmsghdr h;
                        char space[CMSG_SPACE(MAX_FDS * sizeof(int))];
                } control;
                struct iovec iov = { f->buf + f->off, f->len - f->off };
                struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
                if (f->nfds > 0) {
                        m.msg_control = &control;
                        m.msg_controllen = CMSG_SPACE((size_t) f->nfds * sizeof(int));
                        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
                        c->cmsg_level = SOL_SOCKET;
                        c->cmsg_type = SCM_RIGHTS;
                        c->cmsg_len = CMSG_LEN((size_t) f->nfds * sizeof(int));
                        memcpy(CMSG_DATA(c), f->fds, (size_t) f->nfds * sizeof(int));
                }
                ssize_t n = sendmsg(l->fd[!side], &m, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0)
                        return errno == EAGAIN || errno == EINTR ? 0 : -1;
                /* The receiver holds its own copies now. */
                close_fds(f->fds, f->nfds);
                f->nfds = 0;
                f->off += (size_t) n;
        }
        return 1;
}

/* Moves what can move on one connection; its epoll interest follows what is left to do. */
static void link_pump(struct wayland_watch *w, struct link *l) {
        bool ended = false, moved = true;
        while (moved && !ended) {
                moved = false;
                for (int side = 0; side < 2 && !ended; side++) {
                        struct flow *f = &l->flows[side];
                        if (f->off == f->len) {
                                int r = flow_read(l, side);
                                ended = r < 0;
                                moved |= r > 0;
                        }
                        int r = flow_write(l, side);
                        ended |= r < 0;
                }
        }
        w->shown |= l->frames.shown;
        if (l->frames.error[0] && !w->refused[0])
                memcpy(w->refused, l->frames.error, sizeof w->refused);
        if (ended) {
                /* Either side closed (libwayland never closes half-way): what the other sent last,
                 * a protocol error from the compositor say, is passed on if it can be at once. */
                for (int side = 0; side < 2; side++)
                        (void) flow_write(l, side);
                link_remove(w, l);
                return;
        }
        for (int side = 0; side < 2; side++) {
                /* Read from a side only once its last read is passed on (back-pressure); write to it
                 * while the other side's flow holds bytes. */
                uint32_t events = (l->flows[side].off == l->flows[side].len ? EPOLLIN : 0) |
                                  (l->flows[!side].off < l->flows[!side].len ? EPOLLOUT : 0);
                struct epoll_event ev = { .events = events, .data.ptr = &l->ends[side] };
                (void) epoll_ctl(w->epoll, EPOLL_CTL_MOD, l->fd[side], &ev);
        }
}

bool wayland_watch_shown(struct wayland_watch *w) {
        /* One event at a time: handling one may free a connection another event names. */
        for (int i = 0; i < EVENTS_PER_CALL; i++) {
                struct epoll_event ev;
                if (epoll_wait(w->epoll, &ev, 1, 0) <= 0)
                        break;
                if (!ev.data.ptr)
                        accept_one(w);
                else
                        link_pump(w, ((struct end *) ev.data.ptr)->link);
        }
        return w->shown;
}

void wayland_watch_reset(struct wayland_watch *w) {
        /* A connection that showed a frame was an earlier launch's program. One that showed none may
         * be a program's that is being readied for a launch to come (headstartd --prepare-display
         * opens the display ahead): it stays, and its first frame counts for the launch that shows
         * it. An earlier launch's that showed none ends with its program. */
        for (struct link *l = w->links, *next; l; l = next) {
                next = l->next;
                if (l->frames.shown)
                        link_remove(w, l);
        }
        w->shown = false;
        w->problem[0] = '\0';
        w->refused[0] = '\0';
}

void wayland_watch_close(struct wayland_watch *w) {
        if (!w)
                return;
        while (w->links)
                link_remove(w, w->links);
        if (w->listener >= 0)
                close(w->listener);
        if (w->epoll >= 0)
                close(w->epoll);
        if (w->address[0])
                unlink(w->address);
        if (w->dir[0])
                rmdir(w->dir);
        free(w);
}
