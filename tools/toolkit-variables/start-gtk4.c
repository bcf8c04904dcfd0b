/* SPDX-License-Identifier: MIT */
/* What a prepared child does to start GTK 4 (src/launcher/child/prepare-toolkit.c). */
#include <gtk/gtk.h>
/* after gtk.h, which it must follow */
#include <gsk/gl/gskglrenderer.h>

extern int armed;

int main(void) {
        armed = 1;
        gtk_init();
        char *font = NULL;
        g_object_get(gtk_settings_get_default(), "gtk-font-name", &font, NULL);
        PangoLayout *layout = pango_layout_new(pango_font_map_create_context(pango_cairo_font_map_get_default()));
        pango_layout_set_font_description(layout, pango_font_description_from_string(font));
        pango_layout_set_text(layout, "Hello", -1);
        int w, h;
        pango_layout_get_pixel_size(layout, &w, &h);
        GskRenderer *renderer = gsk_gl_renderer_new();
        GError *error = NULL;
        if (gsk_renderer_realize(renderer, NULL, &error))
                gsk_renderer_unrealize(renderer);
        g_clear_error(&error);
        g_object_unref(renderer);
        armed = 0;
        return 0;
}
