/* SPDX-License-Identifier: MIT */
/* window-shown: tells when a program's first window shows, for `headstart profile --ready-window`
 * (a program that says nothing when its window shows). On X ($DISPLAY) it watches the root window
 * for the first top-level window mapped (window-watch.c). With $WAYLAND_DISPLAY set it is the proxy
 * of wayland-watch.c: the program must be given the socket it names as its WAYLAND_DISPLAY, and a
 * toplevel's first frame committed is the window shown; with both set, either counts.
 *
 * It prints "watching" once it watches (followed by " WAYLAND_DISPLAY=PATH" with Wayland), then
 * "mapped" (X) or "shown" (Wayland) at the first window. On X alone it exits there; a proxy goes
 * on passing the program's messages until SIGTERM (it then removes its socket), which the end of
 * its parent sends too (PR_SET_PDEATHSIG). SIGUSR1 starts a new watch on the same socket: the
 * next first frame says "shown" again, once it said "next" (a device's app opened again, with the same WAYLAND_DISPLAY
 * as before, so that headstartd --prepare-display can start its toolkit ahead). It exits with 1 and a message when it cannot watch (no
 * display, no compositor, no libxcb in this build) or loses the X display before a window shows. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "wayland-watch.h"
#include "window-watch.h"

static volatile sig_atomic_t stop_requested;

static volatile sig_atomic_t next_requested;

static void on_signal(int sig) {
        if (sig == SIGUSR1)
                next_requested = 1;
        else
                stop_requested = 1;
}

static void say(const char *line) {
        printf("%s\n", line);
        fflush(stdout);
}

int main(void) {
        struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: poll returns EINTR */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGUSR1, &sa, NULL);
        pid_t parent = getppid();
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
                return EXIT_FAILURE;

        const char *wayland = getenv("WAYLAND_DISPLAY"), *display = getenv("DISPLAY");
        struct wayland_watch *wl = NULL;
        struct window_watch *x = NULL;
        if (wayland && *wayland && !(wl = wayland_watch_open()))
                return EXIT_FAILURE;
        if ((!wl || (display && *display)) && !(x = window_watch_open())) {
                wayland_watch_close(wl);
                return EXIT_FAILURE;
        }
        if (wl)
                printf("watching WAYLAND_DISPLAY=%s\n", wayland_watch_address(wl));
        else
                printf("watching\n");
        fflush(stdout);

        /* SIGUSR1 and SIGTERM are taken only inside ppoll: one that comes between the flags' check
         * and the wait is not lost until the next event. */
        sigset_t blocked, during_wait;
        sigemptyset(&blocked);
        sigaddset(&blocked, SIGUSR1);
        sigaddset(&blocked, SIGTERM);
        sigaddset(&blocked, SIGINT);
        sigprocmask(SIG_BLOCK, &blocked, &during_wait);
        int status = EXIT_SUCCESS;
        bool shown = false;
        while (!stop_requested) {
                struct pollfd p[2] = { { x ? window_watch_fd(x) : -1, POLLIN, 0 },
                                       { wl ? wayland_watch_fd(wl) : -1, POLLIN, 0 } };
                if (ppoll(p, 2, NULL, &during_wait) < 0 && errno != EINTR)
                        break;
                if (next_requested && wl) {
                        next_requested = 0;
                        wayland_watch_reset(wl);
                        if (x)
                                window_watch_reset(x);
                        shown = false;
                        say("next");
                }
                if (x && !shown && window_watch_mapped(x)) {
                        say("mapped");
                        shown = true;
                        if (!wl)
                                break;
                }
                if (wl && wayland_watch_shown(wl) && !shown) {
                        say("shown");
                        shown = true;
                }
                if (x && !shown && (p[0].fd < 0 || (p[0].revents & (POLLHUP | POLLERR)))) {
                        fprintf(stderr, "window-shown: lost the X display\n");
                        status = EXIT_FAILURE; /* not "mapped": no window was seen */
                        break;
                }
        }
        window_watch_close(x);
        wayland_watch_close(wl);
        return status;
}
