/* SPDX-License-Identifier: MIT */
/* A GtkApplication without a window, as most GNOME programs start (g_application_run): it says the
 * locale as its main starts, in its startup handler and as it activates, then ends. Under exec that
 * is C, then the environment's: GTK sets it in g_application_run, before the command line is read.
 * Built for GTK 3 (gtk-application) and GTK 4 (gtk4-application), for tests/test_prepare_display.py. */
#include <gtk/gtk.h>
#include <locale.h>

#include "mark.h"

static void say_locale(const char *when) {
        printf("%s: %s\n", when, setlocale(LC_ALL, NULL));
}

static void on_startup(GApplication *app, gpointer data) {
        (void) app, (void) data;
        say_locale("startup");
}

static void on_activate(GApplication *app, gpointer data) {
        (void) app, (void) data;
        say_locale("activate");
}

int main(int argc, char *argv[]) {
        headstart_mark_main();
        say_locale("main");
        GtkApplication *app = gtk_application_new(NULL, G_APPLICATION_NON_UNIQUE);
        g_signal_connect(app, "startup", G_CALLBACK(on_startup), NULL);
        g_signal_connect(app, "activate", G_CALLBACK(on_activate), NULL);
        int status = g_application_run(G_APPLICATION(app), argc, argv);
        g_object_unref(app);
        return status;
}
