/* SPDX-License-Identifier: MIT */
/* A GTK 3 hello window: about 70 libraries. With a display it shows a window and quits once the
 * window is on screen; without one it initialises what it can and says so. On X the window is on
 * screen once mapped; on Wayland mapping comes before anything is drawn, so it quits after its
 * first frame was committed to the compositor instead (what headstart's Wayland watch waits for). */
#include <gtk/gtk.h>
#include <locale.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#ifdef GDK_WINDOWING_WAYLAND
#include <gdk/gdkwayland.h>
#endif
#ifdef ADDS_FONT
#include <fontconfig/fontconfig.h>
#endif

#include "mark.h"

#ifdef SETS_OTHER
/* A compiled-in resource, as glib-compile-resources makes them, whose compressed bytes happen to
 * spell a variable GTK reads ("\xb0TZ", as gtk3-demo's do): data, not a name the program uses. */
__attribute__((section(".gresource.hello"), used)) static const char resource_bytes[] = "\x78\xb0TZ\0\x7f";
#endif

#ifdef MAIN_IN_LIBRARY
/* Built as a library of its own whose main the program's calls (main-in-library.c), as geany's
 * and mousepad's code is in libgeany and libmousepad. */
#define main hs_gtk_hello_main
int hs_gtk_hello_main(int argc, char *argv[]);
#endif

#if defined(SAME_CODE) || defined(OTHER_CODE)
/* The library's function again (same-code-lib.c), as a program defines a C++ inline function its
 * libraries define too: weak, or (OTHER_CODE) a definition of its own that replaces the library's. */
#ifdef SAME_CODE
__attribute__((weak))
#endif
int hs_same_code(int x) {
        return 2 * x + 1;
}
/* Its second name, as a C++ constructor's or destructor's variants (C1 and C2) are one function. */
extern int hs_same_code_too(int x) __attribute__((alias("hs_same_code")))
#ifdef SAME_CODE
__attribute__((weak))
#endif
;
#ifdef SAME_CODE
__attribute__((weak))
#endif
const long _ZTIN2hs9same_codeE[2] = { 1, 2 }; /* the library's type information, again */
int hs_call_same_code(int x);
#endif

/* Wayland: the window was drawn into a buffer in this frame's paint phase... */
static gboolean drawn;

static gboolean on_draw(GtkWidget *w, cairo_t *cr, gpointer data) {
        (void) w, (void) cr, (void) data;
        drawn = TRUE;
        return FALSE;
}

/* ...which GDK's Wayland backend attaches and commits in its own after-paint handler, connected
 * when the window was realised, so before this one. (A frame before the compositor's first
 * configure paints nothing.) */
static void on_after_paint(GdkFrameClock *clock, gpointer data) {
        (void) clock, (void) data;
        if (drawn)
                gtk_main_quit();
}

static gboolean on_mapped(GtkWidget *w, GdkEvent *e, gpointer data) {
        (void) e, (void) data;
        printf("window shown\n");
        fflush(stdout); /* a benchmark reading a pipe times this line: it must not wait in a buffer */
#ifdef GDK_WINDOWING_WAYLAND
        if (GDK_IS_WAYLAND_DISPLAY(gtk_widget_get_display(w))) {
                g_signal_connect(w, "draw", G_CALLBACK(on_draw), NULL);
                g_signal_connect(gtk_widget_get_frame_clock(w), "after-paint", G_CALLBACK(on_after_paint), NULL);
                return FALSE;
        }
#endif
        gtk_main_quit();
        return FALSE;
}

static void spin(long ms) {
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        do
                clock_gettime(CLOCK_MONOTONIC, &now);
        while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

int main(int argc, char *argv[]) {
        headstart_mark_main();
        printf("gtk-hello: GTK %u.%u.%u, %d argument(s)\n", gtk_get_major_version(), gtk_get_minor_version(),
               gtk_get_micro_version(), argc - 1);
        bool says_locale = false;
        long spin_ms = 0;
        for (int i = 1; i < argc; i++) {
                /* "spin:MS": computes for MS ms once its window is shown, as a program that builds more
                 * after its first frame does. */
                if (strncmp(argv[i], "spin:", 5) == 0)
                        spin_ms = strtol(argv[i] + 5, NULL, 10);
                printf("  argv[%d] = %s\n", i, argv[i]);
                /* "locale": the locale as main starts and once GTK started (exec: C, then the
                 * environment's), for tests to compare. */
                if (strcmp(argv[i], "locale") == 0 && !says_locale)
                        printf("  locale at main: %s\n", setlocale(LC_ALL, NULL));
                says_locale = says_locale || strcmp(argv[i], "locale") == 0;
                /* "comm": the process's name, as ps and pgrep see it. */
                char comm[32] = "";
                FILE *f = strcmp(argv[i], "comm") == 0 ? fopen("/proc/self/comm", "r") : NULL;
                if (f && fgets(comm, sizeof comm, f))
                        printf("  comm %s", comm);
                if (f)
                        fclose(f);
                /* As most programs: it ends before its toolkit starts. */
                if (strcmp(argv[i], "--version") == 0)
                        return 0;
                /* "env:NAME": the variable as the program sees it, for tests to compare. */
                const char *value = strncmp(argv[i], "env:", 4) == 0 ? getenv(argv[i] + 4) : NULL;
                if (strncmp(argv[i], "env:", 4) == 0)
                        printf("  %s=%s\n", argv[i] + 4, value ? value : "(unset)");
                /* "limits": the resource limits a prepared child sets as it is handed the launch. */
                struct rlimit nproc, sigpending;
                if (strcmp(argv[i], "limits") == 0 && getrlimit(RLIMIT_NPROC, &nproc) == 0 &&
                    getrlimit(RLIMIT_SIGPENDING, &sigpending) == 0)
                        printf("  nproc %llu %llu, sigpending %llu %llu\n", (unsigned long long) nproc.rlim_cur,
                               (unsigned long long) nproc.rlim_max, (unsigned long long) sigpending.rlim_cur,
                               (unsigned long long) sigpending.rlim_max);
        }
        /* Its lines so far come out before what GTK says as it starts, on one pipe as on a terminal. */
        fflush(stdout);
#ifdef NAMES_ITSELF
        /* As gnome-2048 and gnome-clocks do: a name of its own before its toolkit starts. */
        g_set_prgname("named-sample");
#endif
#ifdef SETS_THEME
        /* A variable GTK reads as it starts, set before it starts: a GTK started ahead would not see it. */
        setenv("GTK_THEME", "Adwaita:dark", 1);
#endif
#ifdef ADDS_FONT
        /* A font of its own, as games that ship theirs do (this one is not there). */
        FcConfigAppFontAddFile(NULL, (const FcChar8 *) "/nonexistent/its-own-font.ttf");
#endif
#ifdef SETS_OTHER
        /* A variable of its own: GTK never reads it. */
        setenv("HELLO_STARTED", "1", 1);
#endif
#if defined(PARSES_OPTIONS) || defined(OPTION_GROUP)
        static char *greeting;
        static const GOptionEntry entries[] = {
                { "greeting", 0, 0, G_OPTION_ARG_STRING, &greeting, "a greeting", "TEXT" }, { NULL }
        };
#endif
#ifdef OPTION_GROUP
        /* As evince and tali do: its own options and GTK's group in one context, whose parse starts
         * GTK once the options are read (so --help and a bad option end before it starts). */
        GOptionContext *context = g_option_context_new(NULL);
        g_option_context_add_main_entries(context, entries, NULL);
        g_option_context_add_group(context, gtk_get_option_group(TRUE));
        GError *error = NULL;
        if (!g_option_context_parse(context, &argc, &argv, &error)) {
                fprintf(stderr, "gtk-hello: %s\n", error->message);
                return 1;
        }
        g_option_context_free(context);
        if (!gdk_display_get_default()) {
#elif defined(PARSES_OPTIONS)
        /* As gucharmap does: options of its own, parsed with GTK's as GTK starts. */
        if (!gtk_init_with_args(&argc, &argv, NULL, entries, NULL, NULL)) {
#else
        if (!gtk_init_check(&argc, &argv)) {
#endif
                printf("no display: initialised without a window\n");
                return 0;
        }
        if (says_locale)
                printf("  locale once GTK started: %s\n", setlocale(LC_ALL, NULL));
#ifdef NAMES_ITSELF
        printf("named %s\n", g_get_prgname());
#endif
#if defined(SAME_CODE) || defined(OTHER_CODE)
        printf("same code %d\n", hs_call_same_code(20));
#endif
#if defined(PARSES_OPTIONS) || defined(OPTION_GROUP)
        printf("greeting %s, %d argument(s) left\n", greeting ? greeting : "(none)", argc - 1);
#endif
        GtkWidget *window = gtk_window_new(GTK_WINDOW_TOPLEVEL);
#ifdef SETS_OTHER
        /* Its text begins like a GTK variable's name, as assertions in most GTK programs do. */
        g_assert(GTK_IS_WIDGET(window));
#endif
        gtk_window_set_title(GTK_WINDOW(window), "headstart");
        gtk_container_add(GTK_CONTAINER(window), gtk_label_new("Hello from headstart"));
        g_signal_connect(window, "map-event", G_CALLBACK(on_mapped), NULL);
        gtk_widget_show_all(window);
        gtk_main();
        gdk_display_flush(gdk_display_get_default()); /* Wayland: the frame's commit, still buffered */
        spin(spin_ms);
        return 0;
}
