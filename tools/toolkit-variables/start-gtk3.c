/* SPDX-License-Identifier: MIT */
/* What a prepared child does to start GTK 3 (src/launcher/child/prepare-toolkit.c). */
#include <gtk/gtk.h>

#include "measure-font.h"

extern int armed;

int main(int argc, char **argv) {
        armed = 1;
        gtk_init(&argc, &argv);
        measure_settings_font();
        gtk_icon_theme_has_icon(gtk_icon_theme_get_default(), "image-missing");
        armed = 0;
        return 0;
}
