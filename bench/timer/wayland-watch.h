/* SPDX-License-Identifier: MIT */
/* "Window shown" on Wayland, for programs that cannot say so themselves: a proxy between the
 * programs and the compositor. It listens on a socket of its own (in a private directory), to be
 * named in the programs' WAYLAND_DISPLAY; each connection a program makes is joined to a
 * connection of ours to the compositor of our $WAYLAND_DISPLAY, and every byte and file descriptor
 * is passed on both ways, unchanged and in order. On the way, wayland-frames.c reads the requests
 * for the first buffer committed to a toplevel surface (docs/measuring.md). libc only: the wire
 * format is simple enough, and libwayland has no API to watch a connection it does not own.
 *
 * Single-threaded: the caller polls wayland_watch_fd() (an epoll fd) with its other fds and calls
 * wayland_watch_shown() when it is readable; nothing is forwarded in between, so the caller must
 * poll while a program runs (both launch-timer and window-shown do). */
#pragma once

#include <stdbool.h>

struct wayland_watch;

/* Resolves the compositor's socket as libwayland does ($WAYLAND_DISPLAY, relative to
 * $XDG_RUNTIME_DIR unless absolute) and listens on a socket of its own. NULL with a message on
 * stderr when it cannot. */
struct wayland_watch *wayland_watch_open(void);
/* The absolute path of our socket: the programs' WAYLAND_DISPLAY. */
const char *wayland_watch_address(const struct wayland_watch *w);
/* The fd to poll (readable when a connection has something to pass on). */
int wayland_watch_fd(const struct wayland_watch *w);
/* Closes the connections that showed a frame (earlier launches') and forgets their frames. */
void wayland_watch_reset(struct wayland_watch *w);
/* Passes on what is waiting; true once a toplevel's first frame was committed since the last reset. */
bool wayland_watch_shown(struct wayland_watch *w);
/* Why a program's connection since the last reset could not reach the compositor, or NULL. */
const char *wayland_watch_problem(const struct wayland_watch *w);
/* The first protocol error the compositor sent a program since the last reset ("object N, code C:
 * message"), by which it ended that connection; NULL when none. */
const char *wayland_watch_refused(const struct wayland_watch *w);
/* Closes everything and removes our socket and its directory. */
void wayland_watch_close(struct wayland_watch *w);
