/* SPDX-License-Identifier: MIT */
#include "prepare-toolkit.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "per-start-variables.h"
#include "run-program.h"
#include "toolkit-start.h"
#include "wire.h"

/* Where the zygote's channel goes: above the numbers the toolkit's own fds take, which are then the
 * ones they take under exec (3, 4, ...: the display connection first). */
#define CHANNEL_FD_FLOOR 200

const char *toolkit_name(enum toolkit tk) {
        return tk == TOOLKIT_GTK3 ? "gtk3" : tk == TOOLKIT_GTK4 ? "gtk4" : "none";
}

const char *toolkit_started_ahead(enum toolkit tk, const struct prepare_terms *terms) {
        return tk == TOOLKIT_GTK4 && terms->starts_adwaita ? "gtk4+adwaita" : toolkit_name(tk);
}

/* fd moved to floor or above, out of the way of the targets. */
static int above(int fd, int floor) {
        int moved = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, floor);
        if (fd >= 0)
                close(fd);
        return moved;
}

static bool is_target(const struct hs_launch_request *shape, int fd) {
        for (uint32_t i = 0; i < shape->fixed.nfds; i++)
                if ((int) shape->fd_targets[i] == fd)
                        return true;
        return false;
}

/* Each fd the launch will place taken meanwhile, so that the toolkit's own take the numbers they
 * take under exec, after the passed ones: stdin and the others from /dev/null, stdout and stderr
 * into memfds (nothing the toolkit says is lost, and nothing reaches the client before its program
 * runs). */
static int hold_targets(const struct hs_launch_request *shape, int floor) {
        int fds[3] = { above(open("/dev/null", O_RDWR | O_CLOEXEC), floor),
                       above(memfd_create("prepared-stdout", MFD_CLOEXEC), floor),
                       above(memfd_create("prepared-stderr", MFD_CLOEXEC), floor) };
        int r = fds[0] < 0 || fds[1] < 0 || fds[2] < 0 ? -errno : 0;
        for (uint32_t i = 0; r == 0 && i < shape->fixed.nfds; i++) {
                int target = (int) shape->fd_targets[i];
                if (dup2(fds[target < 3 ? target : 0], target) != target)
                        r = -errno;
        }
        hs_close_fds(fds, 3);
        return r;
}

/* Whether GTK 4 will draw the program's first window with its GL renderer: its choice when
 * GSK_RENDERER is unset on X11 and Wayland (gsk_renderer_new_for_surface). */
static bool gtk4_renders_with_gl(void) {
        const char *name = getenv("GSK_RENDERER");
        return !name || strcasecmp(name, "gl") == 0 || strcasecmp(name, "opengl") == 0;
}

/* GTK 4's GL renderer compiles its shader programs once per display, into the display's shared GL
 * context, and keeps them on the display (gsk_gl_driver_for_display): a renderer realized and let
 * go here leaves them there for the program's first window. On a CPU renderer (llvmpipe) that
 * compiling is the largest part of GTK 4's first frame. */
static void compile_gl_programs(void *gtk) {
        void *(*renderer_new)(void) = (void *(*)(void)) dlsym(gtk, "gsk_gl_renderer_new");
        int (*realize)(void *, void *, void **) =
                (int (*)(void *, void *, void **)) dlsym(gtk, "gsk_renderer_realize");
        void (*unrealize)(void *) = (void (*)(void *)) dlsym(gtk, "gsk_renderer_unrealize");
        void (*unref)(void *) = (void (*)(void *)) dlsym(gtk, "g_object_unref");
        void (*clear_error)(void **) = (void (*)(void **)) dlsym(gtk, "g_clear_error");
        if (!renderer_new || !realize || !unrealize || !unref || !clear_error)
                return;
        void *renderer = renderer_new(), *error = NULL;
        /* Failing here, GL fails for the program's window too, which then says so itself. */
        if (realize(renderer, NULL, &error))
                unrealize(renderer);
        clear_error(&error);
        unref(renderer);
}

/* Text in the settings' font measured once: Pango's font map made, the font matched by fontconfig,
 * its file opened by FreeType and its faces by HarfBuzz, all kept in the process-wide font map the
 * program's widgets then use. This is most of what the first text of a program's first window costs
 * (7 to 10 ms of GTK 3's on this host, docs/results.md); measuring it here is not drawing it, and
 * nothing the program reads of the font map or its fonts differs. */
static void measure_text(void *gtk, void *settings) {
        void *(*font_map)(void) = (void *(*)(void)) dlsym(gtk, "pango_cairo_font_map_get_default");
        void *(*context_new)(void *) = (void *(*)(void *)) dlsym(gtk, "pango_font_map_create_context");
        void *(*layout_new)(void *) = (void *(*)(void *)) dlsym(gtk, "pango_layout_new");
        void *(*font_from_string)(const char *) = (void *(*)(const char *)) dlsym(gtk,
                                                                                 "pango_font_description_from_string");
        void (*set_font)(void *, void *) = (void (*)(void *, void *)) dlsym(gtk, "pango_layout_set_font_description");
        void (*set_text)(void *, const char *, int) = (void (*)(void *, const char *, int)) dlsym(gtk,
                                                                                                 "pango_layout_set_text");
        void (*pixel_size)(void *, int *, int *) = (void (*)(void *, int *, int *)) dlsym(gtk,
                                                                                       "pango_layout_get_pixel_size");
        void (*font_free)(void *) = (void (*)(void *)) dlsym(gtk, "pango_font_description_free");
        void (*get)(void *, const char *, ...) = (void (*)(void *, const char *, ...)) dlsym(gtk, "g_object_get");
        void (*unref)(void *) = (void (*)(void *)) dlsym(gtk, "g_object_unref");
        void (*g_free)(void *) = (void (*)(void *)) dlsym(gtk, "g_free");
        if (!font_map || !context_new || !layout_new || !font_from_string || !set_font || !set_text || !pixel_size ||
            !font_free || !get || !unref || !g_free)
                return;
        char *name = NULL;
        get(settings, "gtk-font-name", &name, NULL);
        void *context = context_new(font_map()), *layout = layout_new(context);
        void *font = font_from_string(name ? name : "Sans 10");
        set_font(layout, font);
        set_text(layout, "Ag 0123456789", -1);
        int width, height;
        pixel_size(layout, &width, &height);
        font_free(font);
        unref(layout);
        unref(context);
        g_free(name);
}

/* GTK 3 reads its icon theme's index files (index.theme, icon-theme.cache, for the theme and each it
 * inherits) at the first lookup, 4 to 7 ms of a program's first window here; GTK 4 reads them as it
 * starts. The default theme is the one object the program's lookups then use. */
static void read_icon_theme(void *gtk) {
        void *(*theme_default)(void) = (void *(*)(void)) dlsym(gtk, "gtk_icon_theme_get_default");
        int (*has_icon)(void *, const char *) = (int (*)(void *, const char *)) dlsym(gtk, "gtk_icon_theme_has_icon");
        if (theme_default && has_icon)
                (void) has_icon(theme_default(), "image-missing");
}

/* libadwaita's start, after GTK 4's, as an AdwApplication's startup does it: its style sheets parsed
 * and given to the display, the color scheme read from the settings portal (or GSettings). 21 ms of
 * a program's start on this host, after GTK's settings were read (docs/results.md). */
static const char *start_adwaita(void) {
        void *adwaita = dlopen("libadwaita-1.so.0", RTLD_NOW | RTLD_NOLOAD);
        void (*adw_init)(void) = adwaita ? (void (*)(void)) dlsym(adwaita, "adw_init") : NULL;
        if (!adw_init)
                return "libadwaita is not loaded in the daemon";
        adw_init();
        return NULL;
}

/* Whether the display GTK opened is a Wayland one. */
static bool on_wayland(void *gtk) {
        void *(*display_default)(void) = (void *(*)(void)) dlsym(gtk, "gdk_display_get_default");
        unsigned long (*wayland_type)(void) = (unsigned long (*)(void)) dlsym(gtk, "gdk_wayland_display_get_type");
        int (*is_a)(void *, unsigned long) = (int (*)(void *, unsigned long)) dlsym(gtk, "g_type_check_instance_is_a");
        void *display = display_default ? display_default() : NULL;
        return display && wayland_type && is_a && is_a(display, wayland_type());
}

/* The toolkit's own first steps in a program: GTK 3's gtk_init_check(&argc, &argv), GTK 4's
 * gtk_init_check(), each followed by its settings for the display, which read the theme, the
 * settings' font, GTK 3's icon theme and GTK 4's GL programs. Returns 0, or PREPARED_RETRY or
 * PREPARED_FAILED with *failed. */
static int init_toolkit(enum toolkit tk, const struct prepare_terms *terms, const char *argv0, const char **failed) {
        static char *args[2];
        static int argc = 1;
        static char **argv = args;
        void *gtk = dlopen(tk == TOOLKIT_GTK3 ? "libgtk-3.so.0" : "libgtk-4.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (!gtk)
                return *failed = "its toolkit is not loaded in the daemon", PREPARED_FAILED;
        void *init = dlsym(gtk, "gtk_init_check"), *settings = dlsym(gtk, "gtk_settings_get_default");
        if (!init || !settings)
                return *failed = "its toolkit has no gtk_init_check or gtk_settings_get_default", PREPARED_FAILED;
        int ok;
        if (tk == TOOLKIT_GTK3) {
                args[0] = (char *) argv0;
                ok = ((int (*)(int *, char ***)) init)(&argc, &argv);
        } else {
                ok = ((int (*)(void)) init)();
        }
        /* The display may not be there yet (a compositor restarting). */
        if (!ok)
                return *failed = "the toolkit could not open the display", PREPARED_RETRY;
        if (terms->names_itself && !on_wayland(gtk))
                return *failed = PREPARE_WHY_WAYLAND_ONLY, PREPARED_FAILED;
        if ((*failed = toolkit_start_keep(tk, gtk)))
                return PREPARED_FAILED;
        measure_text(gtk, ((void *(*)(void)) settings)());
        if (tk == TOOLKIT_GTK3)
                read_icon_theme(gtk);
        if (tk == TOOLKIT_GTK4 && gtk4_renders_with_gl())
                compile_gl_programs(gtk);
        if (terms->starts_adwaita && (*failed = start_adwaita()))
                return PREPARED_FAILED;
        return 0;
}

/* Every fd open now but the targets and the channel: the toolkit's, and the captured output. */
static int list_kept(const struct hs_launch_request *shape, int channel, struct prepared_process *p) {
        DIR *d = opendir("/proc/self/fd");
        if (!d)
                return -errno;
        p->nkept = 0;
        int r = 0;
        for (struct dirent *e; r == 0 && (e = readdir(d));) {
                int fd = atoi(e->d_name);
                if (e->d_name[0] == '.' || is_target(shape, fd) || fd == channel || fd == dirfd(d))
                        continue;
                if (p->nkept == PREPARED_MAX_FDS)
                        r = -EMFILE;
                else
                        p->kept[p->nkept++] = fd;
        }
        closedir(d);
        return r;
}

static bool is_socket(int fd) {
        struct stat st;
        return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* The first line the toolkit printed on stderr, to say why it failed. */
static void first_error_line(char *buf, size_t size) {
        ssize_t n = pread(2, buf, size - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
}

/* Whether anything was written to the memfd at fd (hold_targets). */
static bool written(int fd) {
        struct stat st;
        return fstat(fd, &st) == 0 && st.st_size > 0;
}

static int say_why(int code, char *why, size_t size, const char *format, const char *detail) {
        snprintf(why, size, format, detail);
        return code;
}

int toolkit_prepare(enum toolkit tk, const struct prepare_terms *terms, const struct hs_launch_request *shape,
                    int *channel, struct prepared_process *ret, char *why, size_t size) {
        *ret = (struct prepared_process){ .output = { -1, -1 } };
        int floor = CHANNEL_FD_FLOOR;
        for (uint32_t i = 0; i < shape->fixed.nfds; i++)
                if ((int) shape->fd_targets[i] >= floor)
                        floor = (int) shape->fd_targets[i] + 1;
        int moved = fcntl(*channel, F_DUPFD_CLOEXEC, floor);
        if (moved < 0 || (close(*channel), *channel = moved, hold_targets(shape, floor) < 0))
                return say_why(PREPARED_FAILED, why, size, "cannot set up its stdio: %s", strerror(errno));

        child_reset_signals(shape);
        const char *failed = child_take_request_settings(shape, true);
        if (failed)
                return say_why(PREPARED_FAILED, why, size, "%s", failed);
        int r = init_toolkit(tk, terms, shape->argv[0], &failed);
        if (r) {
                char line[160], text[HS_MAX_TEXT];
                first_error_line(line, sizeof line);
                snprintf(text, sizeof text, "%s%s%s", failed, line[0] ? ": " : "", line);
                return say_why(r, why, size, "%s", text);
        }
        /* glibc picks stdout's buffering at its first use, from whether fd 1 is a terminal: used now,
         * it would stay fully buffered on the client's terminal. */
        if (stdout->_IO_buf_base)
                return say_why(PREPARED_FAILED, why, size, "%s", "the toolkit wrote to stdout through stdio as it started");
        if (terms->names_itself && (written(1) || written(2)))
                return say_why(PREPARED_FAILED, why, size, "%s", PREPARE_WHY_PRINTED_UNNAMED);
        ret->output[0] = fcntl(1, F_DUPFD_CLOEXEC, 3);
        ret->output[1] = fcntl(2, F_DUPFD_CLOEXEC, 3);
        r = ret->output[0] < 0 || ret->output[1] < 0 ? -errno : list_kept(shape, *channel, ret);
        if (r < 0)
                return say_why(PREPARED_FAILED, why, size, "cannot list the toolkit's fds: %s", strerror(-r));
        return 0;
}

bool prepared_wait(struct prepared_process *p, const struct hs_launch_request *shape, int channel) {
        struct pollfd fds[PREPARED_MAX_FDS + 1] = { { .fd = channel, .events = POLLIN } };
        nfds_t n = 1;
        for (size_t i = 0; i < p->nkept; i++)
                if (is_socket(p->kept[i])) /* hang-ups and errors only */
                        fds[n++] = (struct pollfd){ .fd = p->kept[i] };
        for (;;) {
                int ready = poll(fds, n, -1);
                if (ready < 0 && errno == EINTR)
                        continue;
                for (nfds_t i = 1; ready > 0 && i < n; i++)
                        if (fds[i].revents & (POLLHUP | POLLERR))
                                return false;
                /* A socket a thread of the toolkit closed itself is no sign of anything. */
                for (nfds_t i = 1; ready > 0 && i < n; i++)
                        if (fds[i].revents & POLLNVAL)
                                fds[i].fd = -1;
                if (ready > 0 && !fds[0].revents)
                        continue;
                return list_kept(shape, channel, p) == 0;
        }
}

const char *toolkit_prepare_and_tell(enum toolkit tk, const struct prepare_terms *terms,
                                     const struct hs_launch_request *shape, int cwd_error, int *channel,
                                     struct prepared_process *ret, char *why, size_t size) {
        char word = PREPARED_READY;
        int r = cwd_error ? PREPARED_RETRY : toolkit_prepare(tk, terms, shape, channel, ret, why + 1, size - 1);
        if (cwd_error)
                snprintf(why + 1, size - 1, "cannot enter the launch's working directory: %s", strerror(cwd_error));
        if (r == 0 && (send(*channel, &word, 1, MSG_NOSIGNAL) < 0 || !prepared_wait(ret, shape, *channel))) {
                r = PREPARED_RETRY;
                snprintf(why + 1, size - 1, "a connection its toolkit opened was closed while it waited (the "
                                           "compositor or the bus went away)");
        }
        if (r == 0)
                return NULL;
        why[0] = (char) r;
        (void) !send(*channel, why, strlen(why), MSG_NOSIGNAL);
        return why + 1;
}

void prepared_take_per_start_variables(char *const *envp) {
        for (size_t i = 0; i < n_per_start_variables; i++)
                (void) unsetenv(per_start_variables[i]);
        for (; *envp; envp++) {
                size_t len;
                const char *name = per_start_name(*envp, &len);
                if (name)
                        (void) setenv(name, *envp + len + 1, 1);
        }
}
