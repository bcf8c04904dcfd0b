/* SPDX-License-Identifier: MIT */
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

#include "control.h"
#include "clock.h"
#include "signals.h"
#include "launch-report-send.h"
#include "learn-watch.h"
#include "loader-env.h"
#include "log.h"
#include "macro.h"
#include "name-watch.h"
#include "peer-process.h"
#include "pool.h"
#include "prepared.h"
#include "wire.h"

extern char **environ;

/* A child ended: its client is told, what it loaded after main learned, its record freed. */
static void on_child_exit(struct server *s, struct child *ch) {
        struct child_end end;
        if (!child_reap(ch, &end))
                return;
        char how[64], reason[128];
        if (ch->waiting) {
                if (ch->channel_fd >= 0) /* not one we let go */
                        log_warning("waiting child %d ended unexpectedly: %s", (int) ch->pid,
                                    child_describe_end(&end.si, how, sizeof how));
                return child_free(s, ch);
        }
        /* Logged before the client hears of it: whoever reads the log once the client is done finds it. */
        if (end.report[0])
                log_warning("child %d could not start its program: %s", (int) ch->pid, end.report);
        else if (s->options->verbose)
                log_info("child %d ended: %s", (int) ch->pid, child_describe_end(&end.si, how, sizeof how));
        if (ch->conn)
                conn_report_end(s, ch->conn, &end);
        if (!end.report[0] && learn_child_ended(s, ch, reason, sizeof reason))
                server_request_refresh(s, reason);
        child_free(s, ch);
}

/* SIGCHLD: some child stopped, continued or ended. Stops and continues are told to the clients that
 * follow them (a shell's job stops and goes on with its program); ends come through the pidfds. */
static void on_child_stops(struct server *s) {
        for (struct child *ch = s->children; ch; ch = ch->next) {
                siginfo_t si = { 0 };
                if (!ch->conn || !ch->conn->follows_stops ||
                    waitid(P_PIDFD, (id_t) ch->pidfd, &si, WSTOPPED | WCONTINUED | WNOHANG) < 0 || si.si_pid == 0)
                        continue;
                if (si.si_code == CLD_CONTINUED) {
                        conn_report_continued(ch->conn);
                        continue;
                }
                const char *name = sigabbrev_np(si.si_status);
                if (s->options->verbose)
                        log_info("child %d stopped by SIG%s", (int) ch->pid, name ? name : "?");
                conn_report_stop(ch->conn, si.si_status);
        }
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

static void retire(struct server *s, const char *why) {
        if (s->retiring)
                return;
        s->retiring = true;
        log_info("retiring: %s; finishing %u programs", why, s->nchildren);
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
                retire(s, "the supervisor is gone");
        } else if (strcmp(msg, CONTROL_RETIRE) == 0)
                retire(s, "a newer zygote serves");
        else if (strcmp(msg, CONTROL_PING) == 0)
                (void) control_send(s->control_fd, CONTROL_PONG);
}

static void on_files_changed(struct server *s) {
        const char *path = file_watch_read(&s->files);
        if (path) {
                char reason[CONTROL_MAX - 16];
                snprintf(reason, sizeof reason, "changed on disk: %s", path);
                server_request_refresh(s, reason);
        }
}

/* The names the loader would look up under exec: one that cannot be watched leaves the others. */
static void watch_names(struct server *s, const struct string_list *missing, char **changed) {
        char problem[PATH_MAX + 64];
        name_watch_add(&s->files, s->cache.dir, missing, changed, problem, sizeof problem);
        if (!problem[0])
                return;
        log_warning("cannot watch every name the loader looks a library up by (%s); a library changed there "
                    "is served in its old version until a refresh: SIGHUP after an update",
                    problem);
        snprintf(s->files_status, sizeof s->files_status, "partial -- not watched: %s", problem);
}

void server_watch_files(struct server *s, const struct string_list *missing) {
        char *changed = NULL;
        snprintf(s->files_status, sizeof s->files_status, "on");
        int r = file_watch_init(&s->files, s->cache.dir, &changed);
        for (size_t i = 0; i < s->nregistered && r >= 0; i++)
                r = file_watch_add(&s->files, s->registered[i].path);
        if (r >= 0)
                watch_names(s, missing, &changed);
        if (r >= 0)
                r = watch_fd(s->epoll_fd, s->files.fd, &s->files_watch, EPOLLIN);
        if (r < 0) {
                log_warning_errno(r, "cannot watch the loaded files for changes; refresh by SIGHUP after an update");
                snprintf(s->files_status, sizeof s->files_status, "off -- %s", strerror(-r));
        }
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

/* A stop from the supervisor, or from anyone else. One from each (a signal to every process of the
 * unit, then the supervisor's own) is one request; a second from the same side leaves the programs. */
static void begin_shutdown(struct server *s, bool by_supervisor) {
        unsigned side = by_supervisor ? 1u : 2u;
        if (s->shutting_down && !(s->stop_sides & side)) {
                s->stop_sides |= side;
                return;
        }
        s->stop_sides |= side;
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

/* A served program's getppid() is this zygote, so it can signal us (an X server says it is ready
 * with SIGUSR1 to its parent): what our own children send is ignored, never obeyed. */
static void on_signal(struct server *s) {
        struct signalfd_siginfo si;
        while (read(s->signal_fd, &si, sizeof si) == (ssize_t) sizeof si) {
                int sig = (int) si.ssi_signo;
                pid_t from = (pid_t) si.ssi_pid;
                if (sig == SIGCHLD)
                        on_child_stops(s);
                else if (from > 0 && child_is_ours(s, from))
                        log_signal_ignored(s, sig, from, "a program this zygote started");
                else if (sig == SIGHUP)
                        server_request_refresh(s, "SIGHUP to the zygote");
                else if (sig == SIGTERM || sig == SIGINT) {
                        /* Not the supervisor's stop: it must know at once that we no longer accept,
                         * or clients would wait for us until our programs end (a home screen's never
                         * does). */
                        bool by_supervisor = from == getppid();
                        if (!by_supervisor && s->control_fd >= 0 && !s->shutting_down)
                                (void) control_send(s->control_fd, CONTROL_LEAVING);
                        begin_shutdown(s, by_supervisor);
                }
                else
                        log_signal_ignored(s, sig, from, "not one a zygote takes (SIGTERM, SIGINT, SIGHUP)");
        }
}

int server_run(struct server *s) {
        struct epoll_event events[64];

        for (;;) {
                bool idle = s->nchildren == 0 && !s->pool;
                if (s->force_exit || (s->shutting_down && idle) || (s->retiring && idle && !s->conns))
                        break;
                /* The pool is refilled only when no event is waiting: a request never waits for it. */
                int timeout = conn_handle_deadlines(s);
                int refill_in = pool_refill_in_ms(s);
                bool refill = refill_in == 0;
                if (refill_in >= 0 && (timeout < 0 || refill_in < timeout))
                        timeout = refill_in;
                int prepare_in = prepared_fill_in_ms(s);
                if (prepare_in >= 0 && (timeout < 0 || prepare_in < timeout))
                        timeout = prepare_in;
                int scan_in = learn_scan_in_ms(s);
                if (scan_in >= 0 && (timeout < 0 || scan_in < timeout))
                        timeout = scan_in;
                int accept_in = conn_resume_accepting_in(s);
                if (accept_in >= 0 && (timeout < 0 || accept_in < timeout))
                        timeout = accept_in;
                int n = epoll_wait(s->epoll_fd, events, (int) ELEMENTSOF(events), timeout);
                if (n == 0 && refill) {
                        pool_add_one(s);
                        continue;
                }
                if (n == 0 && prepared_fill_in_ms(s) == 0) {
                        prepared_fill(s);
                        continue;
                }
                if (n == 0 && learn_scan_in_ms(s) == 0) {
                        char reason[128];
                        if (learn_scan(s, reason, sizeof reason))
                                server_request_refresh(s, reason);
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
                                        conn_accept_all(s);
                                break;
                        case WATCH_SIGNAL:
                                on_signal(s);
                                break;
                        case WATCH_CONN:
                                if (conn_on_event(s, (struct conn *) w, events[i].events))
                                        server_request_refresh(s, "--refresh-launches reached");
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
                        case WATCH_PREPARED:
                                prepared_on_news(s, (struct prepared_program *) w);
                                break;
                        case WATCH_DISPLAY:
                                prepared_on_display(s, (struct display_watch *) w);
                                break;
                        }
                }
                conn_free_closed(s);
        }
        log_info("stopped after %llu launches and %llu declines", (unsigned long long) s->launches,
                 (unsigned long long) s->declines);
        return 0;
}

int server_init(struct server *s, const struct daemon_options *o, int listen_fd, int signal_fd, const char *cache_dir,
                const char *interp) {
        *s = (struct server){
                .options = o, .listen_fd = listen_fd, .epoll_fd = -1, .signal_fd = signal_fd, .control_fd = -1,
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

        peer_process_setup(listen_fd);
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
        if ((r = watch_fd(s->epoll_fd, listen_fd, &s->listen_watch, EPOLLIN)) < 0 ||
            (r = watch_fd(s->epoll_fd, s->signal_fd, &s->signal_watch, EPOLLIN)) < 0 ||
            (s->control_fd >= 0 && (r = watch_fd(s->epoll_fd, s->control_fd, &s->control_watch, EPOLLIN)) < 0))
                return log_error_errno(r, "epoll_ctl");
        return 0;
}

void server_done(struct server *s) {
        while (s->conns)
                conn_close(s, s->conns);
        conn_free_closed(s);
        while (s->children) {
                s->children->conn = NULL;
                child_free(s, s->children);
        }
        while (s->pool)
                child_free(s, s->pool); /* the channel closes: the child exits */
        prepared_done(s);
        image_cache_done(&s->cache);
        file_watch_done(&s->files);
        if (s->control_fd >= 0)
                close(s->control_fd);
        if (s->report_fd >= 0)
                close(s->report_fd);
        loader_env_free(s->loader_env);
        read_at_load_done(&s->read_at_load);
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
