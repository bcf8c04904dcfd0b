/* SPDX-License-Identifier: MIT */
/* What a prepared child does to start GTK 4 (src/launcher/child/prepare-toolkit.c), and libadwaita
 * for a program that starts it (found here through dlopen: its headers need not be installed). */
#include <dlfcn.h>
#include <gtk/gtk.h>
/* after gtk.h, which it must follow */
#include <gsk/gl/gskglrenderer.h>

#include "measure-font.h"

extern int armed;

int main(void) {
        armed = 1;
        gtk_init();
        measure_settings_font();
        GskRenderer *renderer = gsk_gl_renderer_new();
        GError *error = NULL;
        if (gsk_renderer_realize(renderer, NULL, &error))
                gsk_renderer_unrealize(renderer);
        g_clear_error(&error);
        g_object_unref(renderer);
        void *adwaita = dlopen("libadwaita-1.so.0", RTLD_NOW);
        void (*adw_init)(void) = adwaita ? (void (*)(void)) dlsym(adwaita, "adw_init") : NULL;
        if (adw_init)
                adw_init();
        armed = 0;
        return 0;
}
