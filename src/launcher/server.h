/* SPDX-License-Identifier: MIT */
/* The daemon's event loop: one thread, one epoll set holding the listening socket, a signalfd,
 * every client connection and the pidfd of every program it started. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "event-loop.h"
#include "file-watch.h"
#include "image-cache.h"
#include "launch-counts.h"
#include "learn.h"
#include "warm-up.h"
#include "options.h"
#include "protocol.h"
#include "schedule.h"

enum watch_kind { WATCH_LISTEN, WATCH_SIGNAL, WATCH_CONN, WATCH_CHILD, WATCH_CONTROL, WATCH_FILES };

struct watch {
        enum watch_kind kind;
};

struct child;

struct conn {
        struct watch watch; /* first: epoll data points here */
        struct conn *prev, *next;
        int fd;
        bool launched;      /* a LAUNCH was served; now waiting for the program to end */
        uint64_t deadline;  /* CLOCK_MONOTONIC ms by which the request must be complete */
        struct hs_header header;
        size_t header_got;
        char *payload;
        size_t payload_got;
        int fds[HS_MAX_FDS];
        size_t nfds;
        struct child *child;
        const struct schedule *caller_schedule; /* applied to the client before it is declined */
};

struct child {
        struct watch watch; /* first: epoll data points here */
        struct child *prev, *next;
        pid_t pid;
        int pidfd;
        int report_fd;     /* read end: text here means the start failed before main; -1 while waiting */
        int channel_fd;    /* a waiting child in the pool takes its request from here; else -1 */
        bool waiting;      /* in the pool (s->pool), not yet running a program (s->children) */
        struct conn *conn; /* NULL once the client has gone */
        struct after_main_page *after_main; /* what it loaded after main, written at its exit; or NULL */
        const char *program; /* the registered program it runs, whose learned objects these are; or NULL */
        uint64_t started_ms; /* when it was handed its program */
        unsigned scans;      /* reads of its /proc maps so far (learn-watch.c) */
};

enum program_mode { MODE_EXEC, MODE_PRELOAD, MODE_WARM };

/* A program registered with --app or --warm, and what the daemon made of it. */
struct registered_file {
        dev_t dev;
        ino_t ino;
        char *path;
        enum program_mode mode;
        char *reason; /* MODE_EXEC: why */
};

/* What the supervisor told this zygote about itself (see supervisor.h); zero without one. */
struct zygote_info {
        unsigned generation; /* 1 for the first zygote, +1 for each refresh */
        char reason[128];    /* why it was started */
};

struct server {
        const struct daemon_options *options;
        struct image_cache cache;
        char interp[256];
        char **loader_env; /* the daemon's own LD_*, GLIBC_TUNABLES and MALLOC_* variables, sorted */
        struct registered_file *registered;
        size_t nregistered;
        int epoll_fd, listen_fd, signal_fd;
        int control_fd; /* to the supervisor */
        int report_fd;  /* launches told to headstart-pind (launch-report.h), or -1 */
        struct file_watch files;
        struct watch listen_watch, signal_watch, control_watch, files_watch;
        struct conn *conns;
        struct conn *closed; /* freed at the end of each batch of events */
        struct child *children; /* running programs */
        unsigned nchildren;
        struct child *pool; /* waiting children, see pool.h */
        unsigned npool;
        uint64_t pool_retry_at; /* CLOCK_MONOTONIC ms; no refill before */
        uint64_t accept_paused_until; /* out of fds: the socket is not watched until then (ms); 0: it is */
        uint64_t signal_logged_ms;    /* when an ignored signal was last logged (ms) */
        uint64_t dropped_logged_ms;   /* when connections over the cap were last logged (ms) */
        uint64_t dropped_connections; /* dropped since */
        bool shutting_down; /* SIGTERM: decline what comes, wait for the programs, exit */
        bool retiring;      /* a newer zygote serves: finish what was accepted, wait, exit */
        bool refresh_requested;
        bool force_exit;
        struct zygote_info zygote;
        struct learned *learned; /* adaptive preload; NULL with --no-learn */
        const struct warm_up_result *warm_up; /* one per --warm-up step */
        const struct string_list *refused_preloads; /* "PATH -- why" for each --preload refused */
        struct file_id *terminal_ok; /* --terminal programs, served to a client with a terminal */
        size_t nterminal_ok;
        struct schedule *schedules; /* --schedule, by program file (schedule.h) */
        size_t nschedules;
        uint64_t started_ms;
        uint64_t launches, declines;  /* by this zygote: --refresh-launches, its last log line */
        struct launch_counts *counts; /* by the whole daemon, every zygote: --status */
};

int server_init(struct server *s, const struct daemon_options *o, int listen_fd, const char *cache_dir,
                const char *interp);
/* Watches the files loaded so far and the registered programs for changes on disk. */
void server_watch_files(struct server *s);
/* Asks the supervisor for a fresh zygote (once; later calls do nothing). */
void server_request_refresh(struct server *s, const char *reason);
/* Tells the supervisor the zygote is ready. */
void server_ready(struct server *s);
int server_run(struct server *s);
void server_done(struct server *s);

/* status.c: answers a STATUS request. */
void status_reply(struct server *s, struct conn *c);
/* launch.c: serves or declines the complete LAUNCH request on c. */
void launch_handle(struct server *s, struct conn *c);
/* Gives a declined client that execs the program itself the program's schedule; a failure is added
 * to the decline text (of size bytes). */
void launch_schedule_caller(struct conn *c, char *text, size_t size);
void conn_close(struct server *s, struct conn *c);
/* Sends ERROR (a malformed request) and closes the connection. */
void conn_fail(struct server *s, struct conn *c, int error, const char *what);
void count_decline(struct server *s, enum hs_decline_reason code, const char *text);

/* learn-watch.c: what served children load after main. */
/* Learns from a child that ended, before it is freed. */
void learn_child_ended(struct server *s, struct child *ch);
/* Milliseconds until a running child's maps are due to be read: 0 now, -1 none. */
int learn_scan_in_ms(const struct server *s);
/* Reads the maps of every running child that is due. */
void learn_scan(struct server *s);

/* A child the daemon just forked, watched through a pidfd; in no list yet. NULL (with the child
 * killed and reaped) when it cannot be supervised. */
struct child *child_watch(struct server *s, pid_t pid);
void child_list_push(struct child **head, struct child *ch);
void child_list_remove(struct child **head, struct child *ch);
