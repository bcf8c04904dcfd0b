/* SPDX-License-Identifier: MIT */
/* A GTK 4 home screen: a window with a grid of 16 labelled tiles (buttons). With a display it shows
 * the window and quits once its first frame is drawn (GTK 4 renders with GL, Mesa's software one
 * under Xvfb: the frame comes some tens of milliseconds after the window is mapped); without one it
 * initialises what it can and says so, as gtk-hello does with GTK 3. */
#include <gtk/gtk.h>
#include <locale.h>
#include <stdbool.h>
#include <string.h>

#include "mark.h"

static const char *const TILES[] = {"Phone", "Messages", "Camera", "Photos", "Music",    "Maps",  "Clock", "Weather",
                                    "Mail",  "Calendar", "Notes",  "Files",  "Settings", "Radio", "Games", "Help"};
enum { COLUMNS = 4 };

/* GDK's "mapped" is no use here: on X11 it is set as the window is asked to show, not when it is. */
static void on_painted(GdkFrameClock *clock, gpointer loop) {
        g_signal_handlers_disconnect_by_func(clock, G_CALLBACK(on_painted), loop);
        /* On Wayland the frame's commit waits in the connection's buffer: GL flushes it as it swaps,
         * GTK's cairo renderer does not, and a program quitting now would never show its frame. */
        gdk_display_flush(gdk_display_get_default());
        printf("window shown\n");
        fflush(stdout); /* a benchmark reading a pipe times this line: it must not wait in a buffer */
        g_main_loop_quit(loop);
}

int main(int argc, char *argv[]) {
        headstart_mark_main();
        printf("gtk4-tiles: GTK %u.%u.%u, %d argument(s)\n", gtk_get_major_version(), gtk_get_minor_version(),
               gtk_get_micro_version(), argc - 1);
        bool says_locale = false;
        for (int i = 1; i < argc; i++) {
                printf("  argv[%d] = %s\n", i, argv[i]);
                /* "locale": as in gtk-hello. */
                if (strcmp(argv[i], "locale") == 0 && !says_locale)
                        printf("  locale at main: %s\n", setlocale(LC_ALL, NULL));
                says_locale = says_locale || strcmp(argv[i], "locale") == 0;
        }
#ifdef NAMES_ITSELF
        /* As gnome-2048 and gnome-clocks do: a name of its own before its toolkit starts. */
        g_set_prgname("named-sample");
#endif
        if (!gtk_init_check()) {
                printf("no display: initialised without a window\n");
                return 0;
        }
        if (says_locale)
                printf("  locale once GTK started: %s\n", setlocale(LC_ALL, NULL));
#ifdef NAMES_ITSELF
        printf("named %s\n", g_get_prgname());
#endif
        GMainLoop *loop = g_main_loop_new(NULL, FALSE);
        GtkWidget *window = gtk_window_new();
        gtk_window_set_title(GTK_WINDOW(window), "headstart");
        gtk_window_set_default_size(GTK_WINDOW(window), 480, 480);
        GtkWidget *grid = gtk_grid_new();
        gtk_grid_set_row_spacing(GTK_GRID(grid), 8);
        gtk_grid_set_column_spacing(GTK_GRID(grid), 8);
        gtk_grid_set_row_homogeneous(GTK_GRID(grid), TRUE);
        gtk_grid_set_column_homogeneous(GTK_GRID(grid), TRUE);
        for (guint i = 0; i < G_N_ELEMENTS(TILES); i++)
                gtk_grid_attach(GTK_GRID(grid), gtk_button_new_with_label(TILES[i]), (int) i % COLUMNS,
                                (int) i / COLUMNS, 1, 1);
        gtk_window_set_child(GTK_WINDOW(window), grid);
        gtk_widget_realize(window);
        GdkFrameClock *clock = gdk_surface_get_frame_clock(gtk_native_get_surface(GTK_NATIVE(window)));
        g_signal_connect(clock, "after-paint", G_CALLBACK(on_painted), loop);
        gtk_window_present(GTK_WINDOW(window));
        g_main_loop_run(loop);
        gtk_window_destroy(GTK_WINDOW(window));
        g_main_loop_unref(loop);
        return 0;
}
