/* SPDX-License-Identifier: MIT */
#include "window-watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef HAVE_XCB
#include <xcb/xcb.h>

struct window_watch {
        xcb_connection_t *conn;
        bool mapped;
};

struct window_watch *window_watch_open(void) {
        int screen_no;
        xcb_connection_t *conn = xcb_connect(NULL, &screen_no);
        /* An X server that resets as its last client leaves (Xvfb without -noreset, which the bench
         * runs: with -noreset GTK caches its GL visuals on the root window and a later launch loads no
         * GL) refuses connections for a moment: try again for up to 2 s. */
        for (int tries = 0; xcb_connection_has_error(conn) && tries < 40; tries++) {
                xcb_disconnect(conn);
                nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
                conn = xcb_connect(NULL, &screen_no);
        }
        if (xcb_connection_has_error(conn)) {
                fprintf(stderr, "launch-timer: cannot connect to the X display '%s'\n", getenv("DISPLAY") ? getenv("DISPLAY") : "");
                xcb_disconnect(conn);
                return NULL;
        }
        xcb_screen_iterator_t it = xcb_setup_roots_iterator(xcb_get_setup(conn));
        for (int i = 0; i < screen_no && it.rem; i++)
                xcb_screen_next(&it);
        uint32_t mask = XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY;
        xcb_void_cookie_t c = xcb_change_window_attributes_checked(conn, it.data->root, XCB_CW_EVENT_MASK, &mask);
        xcb_generic_error_t *e = xcb_request_check(conn, c);
        struct window_watch *w = e ? NULL : calloc(1, sizeof *w);
        free(e);
        if (!w) {
                fprintf(stderr, "launch-timer: cannot watch the X display's root window\n");
                xcb_disconnect(conn);
                return NULL;
        }
        w->conn = conn;
        return w;
}

int window_watch_fd(const struct window_watch *w) {
        /* A lost connection (the X server ended) stays readable for ever: nothing more to watch. */
        return xcb_connection_has_error(w->conn) ? -1 : xcb_get_file_descriptor(w->conn);
}

bool window_watch_mapped(struct window_watch *w) {
        xcb_generic_event_t *ev;
        while ((ev = xcb_poll_for_event(w->conn))) {
                if ((ev->response_type & 0x7f) == XCB_MAP_NOTIFY &&
                    !((xcb_map_notify_event_t *) ev)->override_redirect)
                        w->mapped = true;
                free(ev);
        }
        return w->mapped;
}

void window_watch_reset(struct window_watch *w) {
        (void) window_watch_mapped(w);
        w->mapped = false;
}

void window_watch_close(struct window_watch *w) {
        if (w) {
                xcb_disconnect(w->conn);
                free(w);
        }
}

#else

struct window_watch *window_watch_open(void) {
        fprintf(stderr, "launch-timer: built without libxcb, so it cannot watch for windows\n");
        return NULL;
}
int window_watch_fd(const struct window_watch *w) {
        (void) w;
        return -1;
}
void window_watch_reset(struct window_watch *w) {
        (void) w;
}
bool window_watch_mapped(struct window_watch *w) {
        (void) w;
        return false;
}
void window_watch_close(struct window_watch *w) {
        (void) w;
}
#endif
