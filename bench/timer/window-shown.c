/* SPDX-License-Identifier: MIT */
/* window-shown: tells when a top-level window appears on $DISPLAY, for `headstart profile
 * --ready-window` (a program that says nothing when its window shows). It prints "watching" once it
 * watches the root window, then "mapped" at the first top-level window mapped, and exits; it exits
 * with 1 and a message when it cannot watch (no display, no libxcb in this build) or loses the
 * display before a window shows. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

#include "window-watch.h"

int main(void) {
        struct window_watch *w = window_watch_open();
        if (!w)
                return EXIT_FAILURE;
        printf("watching\n");
        fflush(stdout);
        while (!window_watch_mapped(w)) {
                struct pollfd p = { .fd = window_watch_fd(w), .events = POLLIN };
                if (p.fd < 0 || poll(&p, 1, -1) < 0 || (p.revents & (POLLHUP | POLLERR))) {
                        fprintf(stderr, "window-shown: lost the X display\n");
                        window_watch_close(w);
                        return EXIT_FAILURE; /* not "mapped": no window was seen */
                }
        }
        printf("mapped\n");
        fflush(stdout);
        window_watch_close(w);
        return EXIT_SUCCESS;
}
