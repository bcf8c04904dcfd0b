/* SPDX-License-Identifier: MIT */
/* "Window shown" for programs that cannot say so themselves: the X server reports each top-level
 * window mapped on its screen (MapNotify on the root window, SubstructureNotifyMask). With no
 * window manager, as under the benchmark's Xvfb, mapping is what makes a window visible; its first
 * frame is drawn right after (docs/measuring.md). Built only with libxcb. */
#pragma once

#include <stdbool.h>

struct window_watch;

/* Connects to $DISPLAY and watches its root window. NULL with a message on stderr when it cannot
 * (no libxcb in this build, no display). */
struct window_watch *window_watch_open(void);
/* The fd to poll for events; -1 once the connection is lost. */
int window_watch_fd(const struct window_watch *w);
/* Drops the events so far (windows of earlier launches). */
void window_watch_reset(struct window_watch *w);
/* Reads what arrived; true once a top-level window was mapped since the last reset. */
bool window_watch_mapped(struct window_watch *w);
void window_watch_close(struct window_watch *w);
