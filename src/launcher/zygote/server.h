/* SPDX-License-Identifier: MIT */
/* A zygote's event loop: one thread, one epoll set holding the listening socket, a signalfd, the
 * supervisor's channel, the file watch, every client connection (conn.h) and the pidfd of every
 * child it forked (children.h). struct server is the zygote's whole state. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "children.h"
#include "clock.h"
#include "conn.h"
#include "cpu-spare.h"

#include "file-watch.h"
#include "image-cache.h"
#include "launch-counts.h"
#include "learn.h"
#include "warm-up.h"
#include "options.h"
#include "protocol.h"
#include "read-at-load.h"
#include "schedule.h"
#include "watch.h"

enum program_mode { MODE_EXEC, MODE_PRELOAD, MODE_WARM };

/* A program registered with --app or --warm, and what the daemon made of it. */
struct registered_file {
        dev_t dev;
        ino_t ino;
        char *path;
        enum program_mode mode;
        char *reason; /* why not served (MODE_EXEC), or why not warm as asked (MODE_PRELOAD); or NULL */
};

/* What the supervisor told this zygote about itself (see supervisor.h); zero without one. */
struct zygote_info {
        unsigned generation; /* 1 for the first zygote, +1 for each refresh */
        char reason[128];    /* why it was started */
};

struct server {
        const struct daemon_options *options;
        size_t payload_bytes; /* of the requests the open connections hold, together (conn.c) */
        struct image_cache cache;
        char interp[256];
        char **loader_env; /* the daemon's own LD_*, GLIBC_TUNABLES and MALLOC_* variables, sorted */
        struct read_at_load_list read_at_load; /* what its libraries read as they loaded */
        struct registered_file *registered;
        size_t nregistered;
        int epoll_fd, listen_fd, signal_fd;
        int control_fd; /* to the supervisor */
        int report_fd;  /* launches told to headstart-pind (launch-report.h), or -1 */
        struct file_watch files;
        char files_status[PATH_MAX + 128]; /* --status's file-watch: on, partial -- why, off -- why */
        struct watch listen_watch, signal_watch, control_watch, files_watch;
        struct conn *conns;
        struct conn *closed; /* freed at the end of each batch of events */
        struct child *children; /* running programs */
        unsigned nchildren;
        struct child *pool; /* waiting children, see pool.h, and prepared ones (prepared.h) */
        unsigned npool;
        uint64_t pool_retry_at; /* CLOCK_MONOTONIC ms; no refill before */
        struct prepared_program *prepared; /* --prepare-display, by program */
        char prepared_file[PATH_MAX + 16]; /* where the launches prepared for are kept (prepared-store.h) */
        struct cpu_spare prepare_cpu; /* the CPUs' last look, while prepared children wait for a spare one */
        uint64_t accept_paused_until; /* out of fds: the socket is not watched until then (ms); 0: it is */
        uint64_t signal_logged_ms;    /* when an ignored signal was last logged (ms) */
        uint64_t dropped_logged_ms;   /* when connections over the cap were last logged (ms) */
        uint64_t dropped_connections; /* dropped since */
        bool shutting_down; /* SIGTERM: decline what comes, wait for the programs, exit */
        unsigned stop_sides; /* who asked: 1 the supervisor, 2 anyone else (begin_shutdown) */
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

/* signal_fd: from zygote_signals_open (signals.h), owned by the server from here on. */
int server_init(struct server *s, const struct daemon_options *o, int listen_fd, int signal_fd, const char *cache_dir,
                const char *interp);
/* Watches the files loaded so far and the registered programs for changes on disk, and the names
 * the loader would look them up by under exec (name-watch.h; missing: preload_resolve_closure's). */
void server_watch_files(struct server *s, const struct string_list *missing);
/* Asks the supervisor for a fresh zygote (once; later calls do nothing). */
void server_request_refresh(struct server *s, const char *reason);
/* Tells the supervisor the zygote is ready. */
void server_ready(struct server *s);
int server_run(struct server *s);
void server_done(struct server *s);
