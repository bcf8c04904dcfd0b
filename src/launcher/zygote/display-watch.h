/* SPDX-License-Identifier: MIT */
/* Noticing that a display appears: the socket of the Wayland compositor or X server that a launch's
 * environment names, created (or renamed into place) in its directory. A child preparing a
 * program's toolkit (prepared.h) that found no display is then tried again at once, not after its
 * pause: at boot, the compositor comes a while after the daemon. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "watch.h"

struct display_watch {
        struct watch watch; /* first: epoll data points here */
        int fd;             /* inotify on the socket's directory; -1: not watching */
        char name[NAME_MAX + 1]; /* the socket's name in it */
};

/* The display's socket as the toolkits find it from the environment envp: WAYLAND_DISPLAY (a path,
 * or a name in XDG_RUNTIME_DIR; "wayland-0" when unset), or with GDK_BACKEND=x11 or only DISPLAY
 * set, the X server's socket in /tmp/.X11-unix. Returns 0, or -ENOENT when it names none there (a
 * display over TCP, or no XDG_RUNTIME_DIR). */
int display_socket_path(char *const *envp, char *buf, size_t size);
/* Starts watching for the display that envp names, in epoll_fd, with w->watch as its data (its kind
 * set by the caller). Returns 0 (also when already watching) or a negative errno. */
int display_watch_start(struct display_watch *w, int epoll_fd, char *const *envp);
/* Reads w's events: whether the display's socket appeared among them. */
bool display_watch_read(struct display_watch *w);
void display_watch_stop(struct display_watch *w, int epoll_fd);
