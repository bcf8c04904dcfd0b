/* SPDX-License-Identifier: MIT */
/* --prepare-display PROGRAM: for each such registered GTK 3 or GTK 4 program, one waiting child whose toolkit
 * opened the display and read its settings ahead of the program's next launch
 * (child/prepare-toolkit.h), with the environment, arguments and process settings of its last
 * launch. Only a launch with exactly those takes it; any other gets an ordinary child. */
#pragma once

#include <stdbool.h>
#include <time.h>
#include <stdint.h>
#include <sys/types.h>

#include "display-watch.h"
#include "prepare-toolkit.h"
#include "protocol.h"
#include "launch-settle.h"
#include "settings-files.h"
#include "string-list.h"
#include "watch.h"

struct child;
struct conn;
struct image_entry;
struct server;

struct prepared_program {
        struct watch watch; /* first: its child's channel, in the epoll set while the child may speak */
        struct prepared_program *next;
        struct file_identity id; /* of the file judged */
        char *program;        /* its registered path (or the name given, when refused for not being one) */
        enum toolkit toolkit; /* the one it links; TOOLKIT_NONE: none */
        struct prepare_terms terms; /* what its launches must be like besides */
        char refusal[HS_MAX_TEXT]; /* why it is never prepared; "": it is */
        void *payload; /* its last launch's request as received, and parsed (shape): what a child is
                        * prepared with */
        size_t payload_size;
        struct hs_launch_request shape;
        bool has_shape;
        int cwd_fd;           /* that launch's working directory (O_PATH), which the child enters */
        dev_t cwd_dev;
        ino_t cwd_ino;
        struct child *child;  /* waiting, prepared with shape; or NULL */
        bool ready;           /* its toolkit has started (it said PREPARED_READY) */
        uint64_t forked_ms;   /* when child was forked (CLOCK_MONOTONIC ms) */
        struct settings_files settings; /* its toolkit's settings files as child was forked */
        unsigned prepare_ms;  /* how long the last child took from its fork to ready; 0: none yet */
        struct conn *waiting; /* a launch waiting for child, still starting, to be ready; or NULL */
        uint64_t prepare_at;  /* when to fork one (CLOCK_MONOTONIC ms); 0: none wanted */
        uint64_t launched_ms; /* when its last launch in this zygote came (CLOCK_MONOTONIC ms); 0: none */
        struct launch_settle settle; /* whether its last launch has settled */
        bool waits_for_cpu;   /* due, but put off until that launch settles and the CPUs have one to spare
                               * (prepared.c) */
        unsigned retry_ms;    /* after a failure that may pass, the pause before the next try */
        char failed[HS_MAX_TEXT]; /* why preparing with shape failed: not tried again until it changes */
        char retrying[HS_MAX_TEXT]; /* why the last try failed, when it may pass: tried again after retry_ms,
                                     * or as soon as display sees the display appear */
        struct display_watch display;
        uint64_t taken;       /* launches a prepared child took */
};

/* Whether the launch c (its request req) is to wait for the prepared child of the program image:
 * one that matches the request exactly but is still starting its toolkit, which is nearer ready
 * than a child forked now would be. It is waited for until it has taken twice as long as the last
 * one took from its fork (PREPARE_WAIT_FIRST_MS before one has), for PREPARE_WAIT_MAX_MS at most,
 * never by a launch that waited once (c's waited), nor by two launches; one later than that is let
 * go. When it waits, c's awaiting and
 * deadline are set, and the launch is tried again (conn.h) once the child is ready or gone, or at
 * the deadline. */
bool prepared_wait_for_child(struct server *s, struct conn *c, const struct hs_launch_request *req,
                             const struct image_entry *image);
/* c, waiting, is gone before its prepared child was ready. */
void prepared_stop_waiting(struct conn *c);
/* The prepared child of the program that c's request (req) launches, handed the request as
 * pool_take hands one, if its preparation matches the request exactly; else NULL. */
struct child *prepared_take(struct server *s, const struct conn *c, const struct hs_launch_request *req,
                            const struct image_entry *image, int report_fd);
/* At the zygote's start, once its programs are registered and loaded: which toolkit to prepare for
 * each program --prepare-display names (names), or why none, as --status tells; and the launches
 * the last zygote kept (s->prepared_file, prepared-store.h), which children are prepared with
 * before any launch. Returns 0 or -ENOMEM. */
int prepared_init(struct server *s, const struct string_list *names);
/* A launch of the program image was started: if --prepare-display names it, the next child for it
 * is prepared with this request (c's payload), once the program, running as pid, has settled. */
void prepared_note_launch(struct server *s, const struct conn *c, const struct image_entry *image, pid_t pid);
/* p's child said something on its channel (started, or of no use): read as it comes. */
void prepared_on_news(struct server *s, struct prepared_program *p);
/* w, the display watch of one of s's programs, has news: a child is prepared at once if the display
 * it waited for appeared. */
void prepared_on_display(struct server *s, struct display_watch *w);
/* Milliseconds until a prepared child is due: 0 now, -1 none wanted. */
int prepared_fill_in_ms(const struct server *s);
/* Forks the prepared children that are due. */
void prepared_fill(struct server *s);
/* A prepared child is gone: handed its launch (another is prepared after a while), or ended while
 * it waited (not prepared again with the same launch). */
void prepared_child_gone(struct server *s, struct child *ch);
void prepared_done(struct server *s);

/* p's state in a word for --status ("ready", "starting", "due", "retrying", "idle", "unlaunched",
 * "failed", "refused"), and why, when there is a why (else NULL). */
const char *prepared_state(const struct prepared_program *p, const char **ret_why);
