/* SPDX-License-Identifier: MIT */
/* Unit tests of display_socket_path(): which socket a launch's environment makes the toolkits
 * connect to, whose appearance ends a prepared child's pause (display-watch.h). Prints
 * "N passed, N failed". */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "display-watch.h"

static const char *path_of(char *const *envp) {
        static char buf[256];
        int r = display_socket_path(envp, buf, sizeof buf);
        return r == -ENOENT ? "none" : r < 0 ? "error" : buf;
}

#define ENV(...) ((char *const[]){ __VA_ARGS__, NULL })

int main(void) {
        CHECK(strcmp(path_of(ENV("XDG_RUNTIME_DIR=/run/user/7", "WAYLAND_DISPLAY=wayland-1")),
                     "/run/user/7/wayland-1") == 0);
        CHECK(strcmp(path_of(ENV("WAYLAND_DISPLAY=/run/app/wayland-app")), "/run/app/wayland-app") == 0);
        /* libwayland's default, tried first by GTK even when DISPLAY is set with it */
        CHECK(strcmp(path_of(ENV("XDG_RUNTIME_DIR=/run/user/7")), "/run/user/7/wayland-0") == 0);
        CHECK(strcmp(path_of(ENV("WAYLAND_DISPLAY=wayland-1")), "none") == 0);
        CHECK(strcmp(path_of(ENV("DISPLAY=:99")), "/tmp/.X11-unix/X99") == 0);
        CHECK(strcmp(path_of(ENV("DISPLAY=:1.0", "XDG_RUNTIME_DIR=/r")), "/tmp/.X11-unix/X1") == 0);
        CHECK(strcmp(path_of(ENV("DISPLAY=unix:2")), "/tmp/.X11-unix/X2") == 0);
        CHECK(strcmp(path_of(ENV("DISPLAY=host:0")), "none") == 0);
        CHECK(strcmp(path_of(ENV("DISPLAY=:0", "WAYLAND_DISPLAY=w", "XDG_RUNTIME_DIR=/r")), "/r/w") == 0);
        CHECK(strcmp(path_of(ENV("DISPLAY=:0", "WAYLAND_DISPLAY=w", "XDG_RUNTIME_DIR=/r", "GDK_BACKEND=x11")),
                     "/tmp/.X11-unix/X0") == 0);
        CHECK(strcmp(path_of(ENV("DISPLAYX=:5", "XDG_RUNTIME_DIR=/r")), "/r/wayland-0") == 0);
        printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
}
