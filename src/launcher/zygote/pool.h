/* SPDX-License-Identifier: MIT */
/* The pool (--pool N): children forked ahead of time that wait for a request, so a launch needs
 * neither a fork nor, for a warm program, a dlopen that does any work. Each waiting child is a copy
 * of the daemon as it was when the child was forked; it knows nothing until the daemon sends it a
 * request, then it runs child_run() exactly as a freshly forked child would. */
#pragma once

#include "server.h"

/* Forks one waiting child into the pool. */
int pool_add_one(struct server *s);
/* Fills the pool up to its size; used before the daemon says it is ready. */
void pool_fill(struct server *s);
/* Milliseconds until the pool should be refilled: 0 now, -1 not needed. */
int pool_refill_in_ms(const struct server *s);

/* Takes a waiting child and hands it the request on c with the image to load and the write end of
 * the report pipe. On success the child is no longer in the pool and is the caller's to attach.
 * NULL when the pool is empty or the hand-over failed (that child is then killed). */
struct child *pool_take(struct server *s, const struct conn *c, const struct image_entry *image, int report_fd);

/* The same with the waiting child ch, which may be a prepared one (prepared.h). */
struct child *pool_hand_over(struct server *s, struct child *ch, const struct conn *c, const struct image_entry *image,
                             int report_fd);
/* Forks a waiting child that prepares p's toolkit before it waits (not counted in the pool). */
struct prepared_program;
int pool_add_prepared(struct server *s, struct prepared_program *p);

/* Lets every waiting child go (they exit when their channel closes); they are reaped as they end. */
void pool_release(struct server *s);
