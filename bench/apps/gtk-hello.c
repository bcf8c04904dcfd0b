/* SPDX-License-Identifier: MIT */
/* A GTK 3 hello window: about 70 libraries. With a display it shows a window and quits once the
 * window is on screen; without one it initialises what it can and says so. */
#include <gtk/gtk.h>

#include "mark.h"

static gboolean on_mapped(GtkWidget *w, GdkEvent *e, gpointer data) {
        (void) w, (void) e, (void) data;
        printf("window shown\n");
        fflush(stdout); /* a benchmark reading a pipe times this line: it must not wait in a buffer */
        gtk_main_quit();
        return FALSE;
}

int main(int argc, char *argv[]) {
        headstart_mark_main();
        printf("gtk-hello: GTK %u.%u.%u, %d argument(s)\n", gtk_get_major_version(), gtk_get_minor_version(),
               gtk_get_micro_version(), argc - 1);
        for (int i = 1; i < argc; i++)
                printf("  argv[%d] = %s\n", i, argv[i]);
        if (!gtk_init_check(&argc, &argv)) {
                printf("no display: initialised without a window\n");
                return 0;
        }
        GtkWidget *window = gtk_window_new(GTK_WINDOW_TOPLEVEL);
        gtk_window_set_title(GTK_WINDOW(window), "headstart");
        gtk_container_add(GTK_CONTAINER(window), gtk_label_new("Hello from headstart"));
        g_signal_connect(window, "map-event", G_CALLBACK(on_mapped), NULL);
        gtk_widget_show_all(window);
        gtk_main();
        return 0;
}
