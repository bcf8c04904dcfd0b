/* SPDX-License-Identifier: MIT */
/* The locale of a program taken by a prepared child (prepare-toolkit.h).
 *
 * Under exec a program starts in the C locale, and GTK sets the environment's one
 * (setlocale(LC_ALL, "")) at the program's first call that starts it: gtk_init and its variants,
 * GTK 3's gtk_get_option_group, or GtkApplication's local_command_line (in g_application_run) and
 * startup. A prepared child started GTK before its launch, and a started GTK does not set the locale
 * again. So the launch puts the C locale back, and those calls go through functions of this file
 * that set GTK's locale again, once, before they go on: the program's code before its toolkit starts
 * runs in the locale it runs in under exec (nautilus records its tag database's collation locale
 * there). */
#pragma once

#include <link.h>

#include "prepare-toolkit.h"

/* In the prepared child, once GTK (tk; gtk, a dlopen handle of its library) has started: keeps the locale GTK
 * set, and points GtkApplication's local_command_line and startup at functions that set it again
 * first. Returns NULL, or why not (GtkApplication is not as this file knows it). */
const char *toolkit_locale_keep(enum toolkit tk, void *gtk);

/* At the launch, before the program is loaded: the C locale, which exec starts a program in. */
void toolkit_locale_reset(void);

/* Once the program is loaded: its references, and those of every library that links the toolkit,
 * to the functions that start GTK go to functions that set GTK's locale again first. Returns 0 or a
 * negative errno. */
int toolkit_locale_route(const struct link_map *program);
