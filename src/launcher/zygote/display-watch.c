/* SPDX-License-Identifier: MIT */
#include "display-watch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "protocol.h"

/* ":0", ":0.1", "unix:0": the X server's socket; another host's display has none here. */
static int x11_socket_path(const char *display, char *buf, size_t size) {
        if (strncmp(display, "unix:", 5) == 0)
                display += 4;
        if (display[0] != ':' || display[1] < '0' || display[1] > '9')
                return -ENOENT;
        size_t digits = strspn(display + 1, "0123456789");
        int n = snprintf(buf, size, "/tmp/.X11-unix/X%.*s", (int) digits, display + 1);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

int display_socket_path(char *const *envp, char *buf, size_t size) {
        const char *wayland = hs_env_value(envp, "WAYLAND_DISPLAY");
        const char *x11 = hs_env_value(envp, "DISPLAY");
        const char *backend = hs_env_value(envp, "GDK_BACKEND");
        if (x11 && ((backend && strncmp(backend, "x11", 3) == 0) || !wayland))
                return x11_socket_path(x11, buf, size);
        if (!wayland)
                wayland = "wayland-0";
        const char *runtime = hs_env_value(envp, "XDG_RUNTIME_DIR");
        if (wayland[0] != '/' && !runtime)
                return -ENOENT;
        int n = wayland[0] == '/' ? snprintf(buf, size, "%s", wayland) : snprintf(buf, size, "%s/%s", runtime, wayland);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

int display_watch_start(struct display_watch *w, int epoll_fd, char *const *envp) {
        if (w->fd >= 0)
                return 0;
        char path[PATH_MAX];
        int r = display_socket_path(envp, path, sizeof path);
        if (r < 0)
                return r;
        char *slash = strrchr(path, '/');
        if (!slash || strlen(slash + 1) >= sizeof w->name)
                return -EINVAL;
        snprintf(w->name, sizeof w->name, "%s", slash + 1);
        *slash = '\0';
        int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* A link or a socket made elsewhere and renamed into place arrives by a move. */
        if (inotify_add_watch(fd, path[0] ? path : "/", IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0 ||
            (r = watch_fd(epoll_fd, fd, &w->watch, EPOLLIN)) < 0) {
                r = r < 0 ? r : -errno;
                close(fd);
                return r;
        }
        w->fd = fd;
        return 0;
}

bool display_watch_read(struct display_watch *w) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool appeared = false;
        ssize_t n;
        while (w->fd >= 0 && (n = read(w->fd, buf, sizeof buf)) > 0)
                for (char *at = buf; at < buf + n;) {
                        const struct inotify_event *e = (const struct inotify_event *) at;
                        if (e->len && strcmp(e->name, w->name) == 0)
                                appeared = true;
                        at += sizeof *e + e->len;
                }
        return appeared;
}

void display_watch_stop(struct display_watch *w, int epoll_fd) {
        if (w->fd < 0)
                return;
        (void) epoll_ctl(epoll_fd, EPOLL_CTL_DEL, w->fd, NULL);
        close(w->fd);
        w->fd = -1;
}
