/* SPDX-License-Identifier: MIT */
/* A zygote's client connections, as seatd's client.c beside its server.c: accepting them, reading
 * each request without ever blocking on one, the LAUNCH/STATUS dispatch, every reply (DECLINED,
 * ERROR, STATUS_REPLY, EXITED) and closing. A connection carries one request. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"
#include "watch.h"

struct child;
struct child_end;
struct prepared_program;
struct server;

enum conn_stage {
        CONN_READING,  /* its request is not whole yet */
        CONN_WAITING,  /* its LAUNCH waits for a prepared child still starting (prepared.h) */
        CONN_LAUNCHED, /* its LAUNCH was served; now waiting for the program to end */
};

struct conn {
        struct watch watch; /* first: epoll data points here */
        struct conn *prev, *next;
        int fd;
        enum conn_stage stage;
        uint64_t deadline;  /* CLOCK_MONOTONIC ms by which the request must be complete (CONN_READING),
                             * or its launch tried again (CONN_WAITING) */
        struct prepared_program *awaiting; /* whose child it waits for (CONN_WAITING); or NULL */
        bool waited;        /* its launch waited once: it is not made to wait again */
        bool follows_stops; /* its client follows the program's stops (HS_LAUNCH_FLAG_FOLLOWS_STOPS) */
        bool outlives_client; /* its program is not killed when the connection drops (HS_LAUNCH_FLAG_OUTLIVES_CLIENT) */
        pid_t client_pid;   /* the process that connected, found as its launch is handled; 0 before */
        int client_pidfd;   /* a pidfd of it (peer-process.h); -1 before, or when it could not be found */
        struct hs_header header;
        size_t header_got;
        char *payload;
        size_t payload_got;
        int fds[HS_MAX_FDS];
        size_t nfds;
        struct child *child;
};

/* Accepts every client waiting on the socket (only our own user's). */
void conn_accept_all(struct server *s);
/* Out of fds, accepting pauses: the ms until it resumes (-1: not paused), resuming when due. */
int conn_resume_accepting_in(struct server *s);

/* An event on c: reads its request, and once it is whole answers it; after a launch, a hang-up
 * kills the program (its client is gone). Returns true when the launch asks for a fresh zygote
 * (--refresh-launches reached). */
bool conn_on_event(struct server *s, struct conn *c, uint32_t events);
/* Tells the client how its program ended (or that it failed before main), and closes. */
void conn_report_end(struct server *s, struct conn *c, const struct child_end *end);
/* Tells a client that follows its program's stops that it stopped, by sig. */
void conn_report_stop(struct conn *c, int sig);
/* The program was continued (by anyone): so is its client, which stopped with it, as the job a shell
 * waits for would be under exec. */
void conn_report_continued(struct conn *c);
/* Fails the requests not whole by their deadline, and tries again the launches that waited until
 * theirs; returns the ms until the next deadline (-1: none). */
int conn_handle_deadlines(struct server *s);
/* c's launch waited for a prepared child, now ready or gone: it is tried again at once. */
void conn_wake(struct conn *c);

/* Unlinks c at once; it is freed by conn_free_closed, after the batch of events in hand. */
void conn_close(struct server *s, struct conn *c);
void conn_free_closed(struct server *s);
