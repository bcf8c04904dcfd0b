/* SPDX-License-Identifier: MIT */
#include "conn.h"

#include <errno.h>
#include <linux/sockios.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "children.h"
#include "launch-counts.h"
#include "launch.h"
#include "log.h"
#include "prepared.h"
#include "server.h"
#include "status.h"
#include "wire.h"

#define MAX_CONNECTIONS 4096u

/* A request's payload is as large as its header says (up to 16 MiB), and any local process of our
 * user may send one and hang up. From malloc, such buffers raised its mmap threshold and left the
 * zygote's heap holding megabytes no longer used (RSS from 1.9 to 8.6 MiB over a million mutated
 * requests, no leak: LeakSanitizer found none). A large one is mapped on its own and unmapped after,
 * whatever the requests were; the served programs, forked from the zygote, inherit its heap. */
#define PAYLOAD_MAPPED_FROM (64u * 1024u)

/* Each request is bounded (HS_MAX_PAYLOAD), and so are they together, for as long as their connections
 * hold them (a launch's, until its program ends): a process of our user holding
 * thousands of nearly complete ones until their deadlines would otherwise make the zygote hold
 * gigabytes (a red team's finding, 2026-11-30). Sixteen of the largest, or any number of real ones. */
#define MAX_PAYLOAD_BYTES (16u * HS_MAX_PAYLOAD)

static char *payload_alloc(size_t size) {
        if (size < PAYLOAD_MAPPED_FROM)
                return malloc(size ? size : 1);
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
}

static void payload_free(char *p, size_t size) {
        if (p && size >= PAYLOAD_MAPPED_FROM)
                (void) munmap(p, size);
        else
                free(p);
}

static unsigned count_conns(const struct server *s) {
        unsigned n = 0;
        for (const struct conn *c = s->conns; c; c = c->next)
                n++;
        return n;
}

/* Unlinks the connection now and frees it after the current batch of events, which may still
 * hold an event for it (a child's exit closes its client's connection, for one). */
void conn_close(struct server *s, struct conn *c) {
        if (c->child)
                c->child->conn = NULL;
        prepared_stop_waiting(c);
        (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
        if (c->client_pidfd >= 0)
                close(c->client_pidfd);
        c->client_pidfd = -1;
        hs_close_fds(c->fds, c->nfds);
        c->nfds = 0;
        if (c->payload)
                s->payload_bytes -= c->header.size;
        payload_free(c->payload, c->header.size);
        c->payload = NULL;
        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->prev = NULL;
        c->next = s->closed;
        s->closed = c;
}

void conn_free_closed(struct server *s) {
        while (s->closed) {
                struct conn *c = s->closed;
                s->closed = c->next;
                free(c);
        }
}

/* Only the daemon's own user may launch: the kernel's view of the peer, never a claim of the client. */
static bool peer_allowed(int fd) {
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return false;
        return cred.uid == getuid();
}

/* Out of file descriptors, accept fails while the socket stays readable: watched, it would wake us
 * at once, again and again (seen: 7.6 million log lines in 20 s). It is left alone for a while;
 * clients wait in the backlog, or are served once a program ends or a connection goes. */
#define ACCEPT_PAUSE_MS 100u

static void pause_accepting(struct server *s, int error) {
        if (epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->listen_fd, NULL) < 0)
                return;
        log_warning_errno(error, "cannot accept a client; trying again in %u ms", ACCEPT_PAUSE_MS);
        s->accept_paused_until = now_ms() + ACCEPT_PAUSE_MS;
}

/* Returns the ms until accepting resumes (-1: it is not paused), resuming when it is time. */
int conn_resume_accepting_in(struct server *s) {
        if (!s->accept_paused_until)
                return -1;
        uint64_t now = now_ms();
        if (now < s->accept_paused_until)
                return (int) (s->accept_paused_until - now);
        s->accept_paused_until = 0;
        if (s->listen_fd >= 0 && watch_fd(s->epoll_fd, s->listen_fd, &s->listen_watch, EPOLLIN) < 0)
                log_warning_errno(errno, "cannot watch the socket again");
        return -1;
}

/* Once a second at most, with how many since: a flood of connections must not flood the log too
 * (one line per connection over the cap: 907 lines while 5,000 were held). */
static void log_dropped_connection(struct server *s) {
        s->dropped_connections++;
        uint64_t now = now_ms();
        if (s->dropped_logged_ms && now < s->dropped_logged_ms + 1000)
                return;
        log_warning("too many connections (%u): dropped %llu since the last such line", MAX_CONNECTIONS,
                    (unsigned long long) s->dropped_connections);
        s->dropped_connections = 0;
        s->dropped_logged_ms = now;
}

void conn_accept_all(struct server *s) {
        for (;;) {
                int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0) {
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                                pause_accepting(s, errno);
                        else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                log_warning_errno(errno, "accept");
                        return;
                }
                if (!peer_allowed(fd)) {
                        log_warning("refused a connection from another user");
                        (void) hs_send_reason(fd, HS_MSG_ERROR, EPERM, "only the user who runs headstartd may use it");
                        close(fd);
                        continue;
                }
                struct conn *c = count_conns(s) < MAX_CONNECTIONS ? calloc(1, sizeof *c) : NULL;
                if (!c) {
                        log_dropped_connection(s);
                        close(fd);
                        continue;
                }
                *c = (struct conn){ .watch.kind = WATCH_CONN, .fd = fd, .client_pidfd = -1, .deadline = now_ms() + s->options->request_timeout_ms };
                if (watch_fd(s->epoll_fd, fd, &c->watch, EPOLLIN | EPOLLRDHUP) < 0) {
                        close(fd);
                        free(c);
                        continue;
                }
                c->next = s->conns;
                if (s->conns)
                        s->conns->prev = c;
                s->conns = c;
        }
}

static void conn_fail(struct server *s, struct conn *c, int error, const char *what) {
        log_warning("bad request: %s", what);
        (void) hs_send_reason(c->fd, HS_MSG_ERROR, error, what);
        conn_close(s, c);
}

/* Reads as much of the request as is there. Returns 1 when complete, 0 for more later, -1 when the
 * connection was closed. */
static int conn_read(struct server *s, struct conn *c) {
        for (;;) {
                void *dst;
                size_t want;
                if (c->header_got < sizeof c->header) {
                        dst = (char *) &c->header + c->header_got;
                        want = sizeof c->header - c->header_got;
                } else {
                        dst = c->payload + c->payload_got;
                        want = c->header.size - c->payload_got;
                }
                ssize_t n = want ? hs_recv_some(c->fd, dst, want, c->fds, HS_MAX_FDS, &c->nfds) : 0;
                if (n == -EAGAIN)
                        return 0;
                if (n < 0)
                        return conn_fail(s, c, (int) -n, n == -EMSGSIZE ? "too many file descriptors" : "read error"),
                               -1;
                if (n == 0 && want > 0) {
                        if (c->header_got > 0)
                                log_warning("a client disconnected in the middle of its request");
                        conn_close(s, c);
                        return -1;
                }

                if (c->header_got < sizeof c->header) {
                        c->header_got += (size_t) n;
                        if (c->header_got < sizeof c->header)
                                continue;
                        int r = hs_header_check(&c->header);
                        if (r == -EPROTONOSUPPORT)
                                return conn_fail(s, c, -r, "unsupported protocol version"), -1;
                        if (r == -EMSGSIZE)
                                return conn_fail(s, c, -r, "request too large"), -1;
                        if (r < 0)
                                return conn_fail(s, c, -r, "not a headstart request"), -1;
                        if (s->payload_bytes + c->header.size > MAX_PAYLOAD_BYTES)
                                return conn_fail(s, c, EBUSY, "too many large requests at once"), -1;
                        c->payload = payload_alloc(c->header.size);
                        if (!c->payload)
                                return conn_fail(s, c, ENOMEM, "out of memory"), -1;
                        s->payload_bytes += c->header.size;
                } else
                        c->payload_got += (size_t) n;
                if (c->payload_got == c->header.size)
                        return 1;
        }
}

static void count_decline(struct server *s, enum hs_decline_reason code, const char *text, bool log) {
        char line[HS_MAX_TEXT];
        /* It may hold what the client sent (a variable, a path): one line in --status too. */
        snprintf(line, sizeof line, "%s", text);
        text_one_line(line, strlen(line));
        s->declines++;
        launch_counts_declined(s->counts, code, line);
        if (log && s->options->verbose)
                log_info("declined: %s", line);
}

static void decline(struct server *s, struct conn *c, enum hs_decline_reason code, const char *text) {
        count_decline(s, code, text, true);
        (void) hs_send_reason(c->fd, HS_MSG_DECLINED, code, text);
        conn_close(s, c);
}

static void reply_status(struct server *s, struct conn *c) {
        char *text;
        size_t len;
        if (status_compose(s, &text, &len) < 0)
                return conn_fail(s, c, ENOMEM, "out of memory");
        /* A status is a few KiB: it fits the socket buffer, so this does not block. */
        (void) hs_send_message(c->fd, HS_MSG_STATUS_REPLY, text, len, NULL, 0, 1);
        free(text);
        conn_close(s, c);
}

/* The request is whole: one handler per message type. Returns true when a refresh is wanted. */
static bool handle_request(struct server *s, struct conn *c) {
        if (c->header.type == HS_MSG_STATUS && (c->header.size > 0 || c->nfds > 0))
                return conn_fail(s, c, EBADMSG, "a status question carries no payload and no fds"), false;
        if (c->header.type == HS_MSG_STATUS)
                return reply_status(s, c), false;
        if (c->header.type != HS_MSG_LAUNCH)
                return conn_fail(s, c, EBADMSG, "unknown message type"), false;
        struct launch_verdict v;
        launch_handle(s, c, &v);
        switch (v.outcome) {
        case LAUNCH_MALFORMED:
                conn_fail(s, c, v.error, v.text);
                return false;
        case LAUNCH_DECLINED:
                decline(s, c, v.code, v.text);
                return false;
        case LAUNCH_WAITING:
                c->stage = CONN_WAITING;
                return false;
        case LAUNCH_STARTED:
                break;
        }
        /* The child says LAUNCHED itself, right before main (run-program.c); the client's fds are
         * its business now. */
        c->stage = CONN_LAUNCHED;
        c->child = v.child;
        v.child->conn = c;
        hs_close_fds(c->fds, c->nfds);
        c->nfds = 0;
        return v.refresh_wanted;
}

bool conn_on_event(struct server *s, struct conn *c, uint32_t events) {
        if (c->fd < 0)
                return false; /* closed earlier in this batch */
        if (c->stage == CONN_READING) {
                if (conn_read(s, c) != 1)
                        return false;
                (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
                struct epoll_event ev = { .events = EPOLLRDHUP, .data.ptr = &c->watch };
                (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, c->fd, &ev);
                return handle_request(s, c);
        }
        /* After its request the client only listens; a hang-up means it is gone. Its program would
         * have died with it under exec (SIGKILL cannot be forwarded), so it dies now, and so does
         * the process group the program leads (run-program.c): under exec the program and its
         * children are in the client's group, which is what kill -KILL of a job, timeout -s KILL
         * and a service manager's stop kill. The group's number is the child's pid, which no other
         * process can have until we reap the child. Unless the client asked for its program to
         * outlive it (a launcher's, as posix_spawn's would). */
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                if (c->child && !c->outlives_client) {
                        (void) kill(-c->child->pid, SIGKILL);
                        (void) pidfd_send_signal(c->child->pidfd, SIGKILL, NULL, 0); /* if it left it */
                }
                conn_close(s, c);
        }
        return false;
}

void conn_report_end(struct server *s, struct conn *c, const struct child_end *end) {
        if (end->report[0]) {
                count_decline(s, HS_DECLINE_START_FAILED, end->report, false);
                (void) hs_send_reason(c->fd, HS_MSG_DECLINED, HS_DECLINE_START_FAILED, end->report);
        } else {
                /* A client stopped with its program must read how it ended: a program killed while
                 * stopped, or continued and ended at once, was never seen continued. Before EXITED:
                 * a client that has it may be ending, and a SIGCONT then would discard the stop of
                 * whoever traces it (the sanitizers' leak check, a debugger), which then waits for
                 * ever. */
                conn_report_continued(c);
                struct hs_exited msg = { .code = end->si.si_code, .status = end->si.si_status };
                (void) hs_send_message(c->fd, HS_MSG_EXITED, &msg, sizeof msg, NULL, 0, 1);
        }
        conn_close(s, c);
}

void conn_report_stop(struct conn *c, int sig) {
        if (!c->follows_stops)
                return;
        /* SIGSTOP cannot be blocked, so the client could not stop itself with it without a race: a
         * continue of the program between its look and its stop would leave it stopped for good.
         * Sent from here, it comes in order with the SIGCONT of that continue. */
        if (sig == SIGSTOP && c->client_pidfd >= 0)
                (void) pidfd_send_signal(c->client_pidfd, SIGSTOP, NULL, 0);
        /* One report unread is enough: the client looks at the program's state as it reads it. And
         * the socket keeps room for EXITED, which a client slow to read would otherwise lose. */
        int unread = 0;
        if (ioctl(c->fd, SIOCOUTQ, &unread) == 0 && unread > 0)
                return;
        struct hs_stopped msg = { .signal = sig };
        (void) hs_send_message(c->fd, HS_MSG_STOPPED, &msg, sizeof msg, NULL, 0, 1);
}

void conn_report_continued(struct conn *c) {
        if (c->follows_stops && c->client_pidfd >= 0)
                (void) pidfd_send_signal(c->client_pidfd, SIGCONT, NULL, 0);
}

/* A launch that waited for a prepared child, now ready, gone or late, is tried again; it does not
 * wait twice. */
static void launch_again(struct server *s, struct conn *c) {
        prepared_stop_waiting(c);
        c->waited = true;
        c->stage = CONN_READING;
        if (handle_request(s, c))
                server_request_refresh(s, "--refresh-launches reached");
}

int conn_handle_deadlines(struct server *s) {
        uint64_t now = now_ms(), next = UINT64_MAX;
        for (struct conn *c = s->conns, *n; c; c = n) {
                n = c->next;
                if (c->stage == CONN_LAUNCHED)
                        continue;
                if (c->deadline <= now && c->stage == CONN_WAITING)
                        launch_again(s, c);
                else if (c->deadline <= now)
                        conn_fail(s, c, ETIMEDOUT, "request not complete in time");
                else if (c->deadline < next)
                        next = c->deadline;
        }
        return next == UINT64_MAX ? -1 : (int) (next - now);
}

void conn_wake(struct conn *c) {
        c->awaiting = NULL;
        c->deadline = 0;
}
