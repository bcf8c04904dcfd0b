/* SPDX-License-Identifier: MIT */
/* The zygote's records of the children it forked: programs it started (s->children) and children
 * waiting in the pool (s->pool), each watched through a pidfd in the epoll set. What runs inside a
 * forked child is run-program.h. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol.h"
#include "watch.h"

struct conn;
struct server;

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
        struct prepared_program *prepared; /* prepared for this program's launches (prepared.h); or NULL */
        uint64_t started_ms; /* when it was handed its program */
        unsigned scans;      /* reads of its /proc maps so far (learn-watch.c) */
};

/* How a child ended: as waitid says, and what it reported before main (empty: main ran). */
struct child_end {
        siginfo_t si;
        char report[HS_MAX_TEXT];
};

/* A child the daemon just forked, watched through a pidfd in epoll_fd; in no list yet. NULL (with
 * the child killed and reaped) when it cannot be supervised. */
struct child *child_watch(int epoll_fd, pid_t pid);
void child_list_push(struct child **head, struct child *ch);
void child_list_remove(struct child **head, struct child *ch);
/* Takes it out of its list (s->pool or s->children) and frees it. */
void child_free(struct server *s, struct child *ch);

/* Closes its channel (let go, or handed its launch), which the epoll set may watch. */
void child_close_channel(struct server *s, struct child *ch);

/* Reaps a child whose pidfd said it ended. Returns true with *ret filled, false when it has not
 * ended after all. */
bool child_reap(struct child *ch, struct child_end *ret);
/* "exited with status 0", "killed by SIGSEGV (core dumped)": how waitid says it ended. */
const char *child_describe_end(const siginfo_t *si, char *buf, size_t size);
/* Whether pid is one of ours, running or waiting. */
bool child_is_ours(const struct server *s, pid_t pid);
