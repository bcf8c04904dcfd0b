/* SPDX-License-Identifier: MIT */
/* headstartd's settings, from the command line and from a configuration file. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "string-list.h"

struct daemon_options {
        char *socket_path;  /* NULL: $XDG_RUNTIME_DIR/headstart/socket */
        char *cache_dir;    /* NULL: next to the socket, in cache/ */
        struct string_list apps;
        struct string_list check; /* --check PROGRAM...: report how each would be served, then exit */
        struct string_list warm; /* registered too, and loaded into the daemon itself */
        struct string_list preloads;
        struct string_list warm_up; /* framework initialisation run in the zygote (warm-up.h) */
        struct string_list terminal; /* programs served from a terminal too (they only write to it) */
        struct string_list prepare_display; /* programs whose toolkit a child starts ahead (zygote/prepared.h) */
        struct string_list schedules; /* "PROGRAM KEY=VALUE...": how a program is scheduled (schedule.h) */
        bool allow_root;
        bool verbose;
        bool exec_while_starting; /* decline launches until the first zygote is ready: their clients exec */
        unsigned max_children;
        unsigned pool_size; /* waiting children kept forked; 0: none */
        unsigned refresh_launches; /* start a fresh zygote after this many launches; 0: never */
        unsigned refresh_seconds;  /* ... or after this long; 0: never */
        bool no_learn;             /* adaptive preload off: learn nothing, preload nothing learned */
        char *learn_file;          /* NULL: beside the socket, "learned" */
        unsigned learn_refresh;    /* a fresh zygote once this many new objects were learned */
        char *report_launches;     /* headstart-pind's socket; NULL: the default; "none": off */
        /* Internal, set by the supervisor when it starts a zygote (see supervisor.h). */
        struct {
                bool active;
                int listen_fd, control_fd;
                int learned_fd; /* what was learned, in memory, shared by the zygotes (learn.h); -1: none */
                int counts_fd;  /* the daemon's launch counts, shared by the zygotes (launch-counts.h) */
                unsigned generation;
                char *reason;
                /* "LIBRARY\tWHY": a library an earlier try of this zygote could not preload (it
                 * started a thread, or failed); the programs that need it are exec'd. */
                struct string_list leave_out;
        } zygote;
        unsigned request_timeout_ms; /* a request must arrive whole within this */
        unsigned trial_timeout_s;    /* a throwaway child's deadline (throwaway.h) */
};

/* Returns 1 to go on, 0 when done (--help, --version), a negative errno after logging the error. */
int options_parse_argv(struct daemon_options *o, int argc, char *argv[]);
/* Reads a file with one `key = value` setting per line; keys are the long option names. The file
 * must be one only root or our user could have written (trusted-path.h). */
int options_parse_config(struct daemon_options *o, const char *path);
/* The same from an open stream, already judged; `path` names it in messages. */
int options_parse_config_stream(struct daemon_options *o, FILE *f, const char *path);
void options_done(struct daemon_options *o);
