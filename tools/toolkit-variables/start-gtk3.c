/* SPDX-License-Identifier: MIT */
/* What a prepared child does to start GTK 3 (src/launcher/child/prepare-toolkit.c). */
#include <gtk/gtk.h>

extern int armed;

int main(int argc, char **argv) {
        armed = 1;
        gtk_init(&argc, &argv);
        char *font = NULL;
        g_object_get(gtk_settings_get_default(), "gtk-font-name", &font, NULL);
        PangoLayout *layout = pango_layout_new(pango_font_map_create_context(pango_cairo_font_map_get_default()));
        pango_layout_set_font_description(layout, pango_font_description_from_string(font));
        pango_layout_set_text(layout, "Hello", -1);
        int w, h;
        pango_layout_get_pixel_size(layout, &w, &h);
        gtk_icon_theme_has_icon(gtk_icon_theme_get_default(), "image-missing");
        armed = 0;
        return 0;
}
