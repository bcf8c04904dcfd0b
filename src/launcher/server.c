/* SPDX-License-Identifier: MIT */
/* The event loop: accepting clients, reading their requests without ever blocking on one of them,
 * and reporting how each program ended. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "after-main.h"
#include "launch-report.h"
#include "control.h"
#include "event-loop.h"
#include "loader-env.h"
#include "log.h"
#include "macro.h"
#include "pool.h"
#include "wire.h"

#define MAX_CONNECTIONS 4096u

extern char **environ;

void count_decline(struct server *s, enum hs_decline_reason code, const char *text) {
        s->declines++;
        launch_counts_declined(s->counts, code, text);
}

static int watch_fd(struct server *s, int fd, struct watch *w, uint32_t events) {
        struct epoll_event ev = { .events = events, .data.ptr = w };
        return epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* A request's payload is as large as its header says (up to 16 MiB), and any local process of our
 * user may send one and hang up. From malloc, such buffers raised its mmap threshold and left the
 * zygote's heap holding megabytes no longer used (RSS from 1.9 to 8.6 MiB over a million mutated
 * requests, no leak: LeakSanitizer found none). A large one is mapped on its own and unmapped after,
 * whatever the requests were; the served programs, forked from the zygote, inherit its heap. */
#define PAYLOAD_MAPPED_FROM (64u * 1024u)

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
        (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
        hs_close_fds(c->fds, c->nfds);
        c->nfds = 0;
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

static void free_closed(struct server *s) {
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
static int resume_accepting_in(struct server *s) {
        if (!s->accept_paused_until)
                return -1;
        uint64_t now = now_ms();
        if (now < s->accept_paused_until)
                return (int) (s->accept_paused_until - now);
        s->accept_paused_until = 0;
        if (s->listen_fd >= 0 && watch_fd(s, s->listen_fd, &s->listen_watch, EPOLLIN) < 0)
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

static void accept_clients(struct server *s) {
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
                *c = (struct conn){ .watch.kind = WATCH_CONN, .fd = fd, .deadline = now_ms() + s->options->request_timeout_ms };
                if (watch_fd(s, fd, &c->watch, EPOLLIN | EPOLLRDHUP) < 0) {
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

void conn_fail(struct server *s, struct conn *c, int error, const char *what) {
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
                        c->payload = payload_alloc(c->header.size);
                        if (!c->payload)
                                return conn_fail(s, c, ENOMEM, "out of memory"), -1;
                } else
                        c->payload_got += (size_t) n;
                if (c->payload_got == c->header.size)
                        return 1;
        }
}

static void on_conn_event(struct server *s, struct conn *c, uint32_t events) {
        if (c->fd < 0)
                return; /* closed earlier in this batch */
        if (!c->launched) {
                if (conn_read(s, c) == 1) {
                        (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
                        struct epoll_event ev = { .events = EPOLLRDHUP, .data.ptr = &c->watch };
                        (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, c->fd, &ev);
                        launch_handle(s, c);
                }
                return;
        }
        /* After the launch the client only listens; a hang-up means it is gone. Its program would
         * have died with it under exec (SIGKILL cannot be forwarded), so it dies now. */
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                if (c->child)
                        (void) pidfd_send_signal(c->child->pidfd, SIGKILL, NULL, 0);
                conn_close(s, c);
        }
}

static void read_report(int fd, char *buf, size_t size) {
        ssize_t n = read(fd, buf, size - 1);
        buf[n > 0 ? n : 0] = '\0';
}

void child_list_push(struct child **head, struct child *ch) {
        ch->prev = NULL;
        ch->next = *head;
        if (*head)
                (*head)->prev = ch;
        *head = ch;
}

void child_list_remove(struct child **head, struct child *ch) {
        if (ch->prev)
                ch->prev->next = ch->next;
        else
                *head = ch->next;
        if (ch->next)
                ch->next->prev = ch->prev;
        ch->prev = ch->next = NULL;
}

struct child *child_watch(struct server *s, pid_t pid) {
        /* The child is ours and not yet reaped, so its pid cannot have been reused: no race. */
        int pidfd = pidfd_open(pid, 0);
        struct child *ch = pidfd >= 0 ? calloc(1, sizeof *ch) : NULL;
        if (ch) {
                *ch = (struct child){ .watch.kind = WATCH_CHILD, .pid = pid, .pidfd = pidfd, .report_fd = -1,
                                      .channel_fd = -1 };
                struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &ch->watch };
                if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, pidfd, &ev) == 0)
                        return ch;
        }
        log_error_errno(errno, "cannot supervise child %d; killing it", (int) pid);
        kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
        if (pidfd >= 0)
                close(pidfd);
        free(ch);
        return NULL;
}

static void child_free(struct server *s, struct child *ch) {
        if (ch->waiting) {
                child_list_remove(&s->pool, ch);
                s->npool--;
        } else {
                child_list_remove(&s->children, ch);
                s->nchildren--;
        }
        (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, ch->pidfd, NULL);
        close(ch->pidfd);
        if (ch->report_fd >= 0)
                close(ch->report_fd);
        if (ch->channel_fd >= 0)
                close(ch->channel_fd);
        after_main_page_free(ch->after_main);
        free(ch);
}

/* "exited with status 0", "killed by SIGSEGV (core dumped)": how waitid says a child ended. */
static const char *describe_end(const siginfo_t *si, char *buf, size_t size) {
        const char *name = sigabbrev_np(si->si_status);
        if (si->si_code == CLD_EXITED)
                snprintf(buf, size, "exited with status %d", si->si_status);
        else
                snprintf(buf, size, "killed by SIG%s%s", name ? name : "?",
                         si->si_code == CLD_DUMPED ? " (core dumped)" : "");
        return buf;
}

static void on_child_exit(struct server *s, struct child *ch) {
        char how[64];
        siginfo_t si = { 0 };
        if (waitid(P_PIDFD, (id_t) ch->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
                return;

        if (ch->waiting) {
                if (ch->channel_fd >= 0) /* not one we let go */
                        log_warning("waiting child %d ended unexpectedly: %s", (int) ch->pid,
                                    describe_end(&si, how, sizeof how));
                return child_free(s, ch);
        }
        char report[HS_MAX_TEXT];
        read_report(ch->report_fd, report, sizeof report);
        struct conn *c = ch->conn;
        if (c) {
                if (report[0]) {
                        launch_schedule_caller(c, report, sizeof report);
                        count_decline(s, HS_DECLINE_START_FAILED, report);
                        (void) hs_send_reason(c->fd, HS_MSG_DECLINED, HS_DECLINE_START_FAILED, report);
                }
                else {
                        struct hs_exited msg = { .code = si.si_code, .status = si.si_status };
                        (void) hs_send_message(c->fd, HS_MSG_EXITED, &msg, sizeof msg, NULL, 0, 1);
                }
                conn_close(s, c);
        }
        if (report[0])
                log_warning("child %d could not start its program: %s", (int) ch->pid, report);
        else if (s->options->verbose)
                log_info("child %d ended: %s", (int) ch->pid, describe_end(&si, how, sizeof how));
        if (!report[0])
                learn_child_ended(s, ch);
        child_free(s, ch);
}

/* Asks the supervisor for a fresh zygote, once. */
void server_request_refresh(struct server *s, const char *reason) {
        if (s->refresh_requested || s->control_fd < 0)
                return;
        s->refresh_requested = true;
        log_info("asking for a refresh: %s", reason);
        int r = control_send(s->control_fd, CONTROL_REFRESH "%s", reason);
        if (r < 0)
                log_warning_errno(r, "cannot reach the supervisor");
}

static void stop_listening(struct server *s) {
        if (s->listen_fd >= 0) {
                (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->listen_fd, NULL);
                close(s->listen_fd);
                s->listen_fd = -1;
        }
        pool_release(s);
}

static void retire(struct server *s) {
        if (s->retiring)
                return;
        s->retiring = true;
        log_info("retiring: a newer zygote serves; finishing %u programs", s->nchildren);
        stop_listening(s);
}

static void on_control(struct server *s) {
        char msg[CONTROL_MAX];
        ssize_t n = control_recv(s->control_fd, msg);
        if (n == -EAGAIN)
                return;
        if (n <= 0) { /* the supervisor is gone: no one will start our successor */
                (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->control_fd, NULL);
                close(s->control_fd);
                s->control_fd = -1;
                retire(s);
        } else if (strcmp(msg, CONTROL_RETIRE) == 0)
                retire(s);
}

static void on_files_changed(struct server *s) {
        const char *path = file_watch_read(&s->files);
        if (path) {
                char reason[CONTROL_MAX - 16];
                snprintf(reason, sizeof reason, "changed on disk: %s", path);
                server_request_refresh(s, reason);
        }
}

void server_watch_files(struct server *s) {
        char *changed = NULL;
        int r = file_watch_init(&s->files, s->cache.dir, &changed);
        for (size_t i = 0; i < s->nregistered && r >= 0; i++)
                r = file_watch_add(&s->files, s->registered[i].path);
        if (r >= 0)
                r = watch_fd(s, s->files.fd, &s->files_watch, EPOLLIN);
        if (r < 0)
                log_warning_errno(r, "cannot watch the loaded files for changes; refresh by SIGHUP after an update");
        if (changed) {
                char reason[CONTROL_MAX - 16];
                snprintf(reason, sizeof reason, "changed on disk while loading: %s", changed);
                server_request_refresh(s, reason);
                free(changed);
        }
}

void server_ready(struct server *s) {
        s->started_ms = now_ms();
        if (s->control_fd >= 0) {
                int r = control_send(s->control_fd, CONTROL_READY);
                if (r < 0)
                        log_warning_errno(r, "cannot tell the supervisor we are ready");
        }
        log_info("zygote %u ready (pid %d): %zu programs registered, pool of %u", s->zygote.generation,
                 (int) getpid(), s->nregistered, s->npool);
}

static void begin_shutdown(struct server *s) {
        if (s->shutting_down) {
                log_info("second stop request: leaving %u programs running", s->nchildren);
                s->force_exit = true;
                return;
        }
        s->shutting_down = true;
        log_info("stopping: no new launches; waiting for %u running programs", s->nchildren);
        stop_listening(s);
}

/* At most one line a second: a program may signal us in a loop. */
static void log_signal_ignored(struct server *s, int sig, pid_t from, const char *why) {
        uint64_t now = now_ms();
        if (now < s->signal_logged_ms + 1000 && s->signal_logged_ms)
                return;
        s->signal_logged_ms = now;
        const char *name = sigabbrev_np(sig);
        log_warning("ignoring SIG%s from pid %d: %s", name ? name : "?", (int) from, why);
}

static bool is_our_child(const struct server *s, pid_t pid) {
        for (const struct child *ch = s->children; ch; ch = ch->next)
                if (ch->pid == pid)
                        return true;
        for (const struct child *ch = s->pool; ch; ch = ch->next)
                if (ch->pid == pid)
                        return true;
        return false;
}

/* A served program's getppid() is this zygote, so it can signal us (an X server says it is ready
 * with SIGUSR1 to its parent): what our own children send is ignored, never obeyed. */
static void on_signal(struct server *s) {
        struct signalfd_siginfo si;
        while (read(s->signal_fd, &si, sizeof si) == (ssize_t) sizeof si) {
                int sig = (int) si.ssi_signo;
                pid_t from = (pid_t) si.ssi_pid;
                if (from > 0 && is_our_child(s, from))
                        log_signal_ignored(s, sig, from, "a program this zygote started");
                else if (sig == SIGHUP)
                        server_request_refresh(s, "SIGHUP to the zygote");
                else if (sig == SIGTERM || sig == SIGINT)
                        begin_shutdown(s);
                else
                        log_signal_ignored(s, sig, from, "not one a zygote takes (SIGTERM, SIGINT, SIGHUP)");
        }
}

/* Drops connections whose request did not arrive in time; returns the ms until the next deadline. */
static int expire_requests(struct server *s) {
        uint64_t now = now_ms(), next = UINT64_MAX;
        for (struct conn *c = s->conns, *n; c; c = n) {
                n = c->next;
                if (c->launched)
                        continue;
                if (c->deadline <= now)
                        conn_fail(s, c, ETIMEDOUT, "request not complete in time");
                else if (c->deadline < next)
                        next = c->deadline;
        }
        return next == UINT64_MAX ? -1 : (int) (next - now);
}

int server_run(struct server *s) {
        struct epoll_event events[64];

        for (;;) {
                bool idle = s->nchildren == 0 && s->npool == 0;
                if (s->force_exit || (s->shutting_down && idle) || (s->retiring && idle && !s->conns))
                        break;
                /* The pool is refilled only when no event is waiting: a request never waits for it. */
                int timeout = expire_requests(s);
                int refill_in = pool_refill_in_ms(s);
                bool refill = refill_in == 0;
                if (refill_in >= 0 && (timeout < 0 || refill_in < timeout))
                        timeout = refill_in;
                int scan_in = learn_scan_in_ms(s);
                if (scan_in >= 0 && (timeout < 0 || scan_in < timeout))
                        timeout = scan_in;
                int accept_in = resume_accepting_in(s);
                if (accept_in >= 0 && (timeout < 0 || accept_in < timeout))
                        timeout = accept_in;
                int n = epoll_wait(s->epoll_fd, events, (int) ELEMENTSOF(events), timeout);
                if (n == 0 && refill) {
                        pool_add_one(s);
                        continue;
                }
                if (n == 0 && learn_scan_in_ms(s) == 0) {
                        learn_scan(s);
                        continue;
                }
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return log_error_errno(errno, "epoll_wait");
                }
                for (int i = 0; i < n; i++) {
                        struct watch *w = events[i].data.ptr;
                        switch (w->kind) {
                        case WATCH_LISTEN:
                                if (s->listen_fd >= 0) /* not closed earlier in this batch */
                                        accept_clients(s);
                                break;
                        case WATCH_SIGNAL:
                                on_signal(s);
                                break;
                        case WATCH_CONN:
                                on_conn_event(s, (struct conn *) w, events[i].events);
                                break;
                        case WATCH_CHILD:
                                on_child_exit(s, (struct child *) w);
                                break;
                        case WATCH_CONTROL:
                                on_control(s);
                                break;
                        case WATCH_FILES:
                                on_files_changed(s);
                                break;
                        }
                }
                free_closed(s);
        }
        log_info("stopped after %llu launches and %llu declines", (unsigned long long) s->launches,
                 (unsigned long long) s->declines);
        return 0;
}

int server_init(struct server *s, const struct daemon_options *o, int listen_fd, const char *cache_dir,
                const char *interp) {
        *s = (struct server){
                .options = o, .listen_fd = listen_fd, .epoll_fd = -1, .signal_fd = -1, .control_fd = -1,
                .files = { .fd = -1 },
        };
        s->report_fd = launch_report_open(launch_report_socket(o));
        snprintf(s->interp, sizeof s->interp, "%s", interp);
        s->listen_watch.kind = WATCH_LISTEN;
        s->signal_watch.kind = WATCH_SIGNAL;
        s->control_watch.kind = WATCH_CONTROL;
        s->files_watch.kind = WATCH_FILES;
        if (o->zygote.active) {
                s->control_fd = o->zygote.control_fd;
                s->zygote.generation = o->zygote.generation;
                snprintf(s->zygote.reason, sizeof s->zygote.reason, "%s", o->zygote.reason ? o->zygote.reason : "");
                /* Given to us without close-on-exec; nothing we start may inherit them. */
                (void) fcntl(listen_fd, F_SETFD, FD_CLOEXEC);
                (void) fcntl(s->control_fd, F_SETFD, FD_CLOEXEC);
                (void) fcntl(s->control_fd, F_SETFL, O_NONBLOCK);
        }

        s->loader_env = loader_env_snapshot(environ);
        if (!s->loader_env)
                return log_error("out of memory");
        /* The mapping keeps the supervisor's memfd; the fd itself is no longer needed. */
        s->counts = launch_counts_map(o->zygote.active ? o->zygote.counts_fd : -1);
        if (o->zygote.active && o->zygote.counts_fd >= 0)
                close(o->zygote.counts_fd);
        if (!s->counts)
                return log_error("out of memory");
        const char *why;
        int r = image_cache_init(&s->cache, cache_dir, s->interp, &why);
        if (r == -EPERM)
                return log_error("cannot use the cache directory %s: %s; pick another --cache-dir", cache_dir, why);
        if (r < 0)
                return log_error_errno(r, "cannot use the cache directory %s", cache_dir);
        s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (s->epoll_fd < 0)
                return log_error_errno(errno, "epoll_create1");
        s->signal_fd = zygote_signals_open();
        if (s->signal_fd < 0)
                return log_error_errno(s->signal_fd, "cannot set up signal handling");
        if (fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK) < 0)
                return log_error_errno(errno, "cannot make the socket non-blocking");
        if ((r = watch_fd(s, listen_fd, &s->listen_watch, EPOLLIN)) < 0 ||
            (r = watch_fd(s, s->signal_fd, &s->signal_watch, EPOLLIN)) < 0 ||
            (s->control_fd >= 0 && (r = watch_fd(s, s->control_fd, &s->control_watch, EPOLLIN)) < 0))
                return log_error_errno(r, "epoll_ctl");
        return 0;
}

void server_done(struct server *s) {
        while (s->conns)
                conn_close(s, s->conns);
        free_closed(s);
        while (s->children) {
                s->children->conn = NULL;
                child_free(s, s->children);
        }
        while (s->pool)
                child_free(s, s->pool); /* the channel closes: the child exits */
        image_cache_done(&s->cache);
        file_watch_done(&s->files);
        if (s->control_fd >= 0)
                close(s->control_fd);
        if (s->report_fd >= 0)
                close(s->report_fd);
        loader_env_free(s->loader_env);
        launch_counts_unmap(s->counts);
        for (size_t i = 0; i < s->nregistered; i++) {
                free(s->registered[i].path);
                free(s->registered[i].reason);
        }
        free(s->registered);
        free(s->terminal_ok);
        schedules_free(s->schedules, s->nschedules);
        if (s->listen_fd >= 0)
                close(s->listen_fd);
        if (s->signal_fd >= 0)
                close(s->signal_fd);
        if (s->epoll_fd >= 0)
                close(s->epoll_fd);
}
