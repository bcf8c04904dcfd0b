/* SPDX-License-Identifier: MIT */
/* The prepared child's font step (src/launcher/child/prepare-toolkit.c), for GTK 3 and GTK 4 alike:
 * a line measured in the settings' font through Pango's own context. */
#pragma once

static void measure_settings_font(void) {
        char *font = NULL;
        g_object_get(gtk_settings_get_default(), "gtk-font-name", &font, NULL);
        PangoLayout *layout = pango_layout_new(pango_font_map_create_context(pango_cairo_font_map_get_default()));
        pango_layout_set_font_description(layout, pango_font_description_from_string(font));
        pango_layout_set_text(layout, "Hello", -1);
        int w, h;
        pango_layout_get_pixel_size(layout, &w, &h);
}
