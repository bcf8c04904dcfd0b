/* SPDX-License-Identifier: MIT */
/* The program's own start of its toolkit, in a child prepared ahead (prepare-toolkit.h).
 *
 * Under exec a program starts in the C locale, and GTK sets the environment's one
 * (setlocale(LC_ALL, "")) and says what it has to say (a module it cannot load, a seat without a
 * keyboard) at the program's first call that starts it: gtk_init and its variants, GTK 3's
 * gtk_get_option_group, or GtkApplication's local_command_line (in g_application_run) and
 * startup. A prepared child started GTK before its launch, and a started GTK does neither again. So
 * the launch puts the C locale back and holds what GTK said, and those calls go through functions
 * of this file that, once, set GTK's locale again and print what it said before they go on. The
 * program's code before its toolkit starts then runs in the locale it runs in under exec (nautilus
 * records its tag database's collation locale there), GTK's messages come after what that code
 * printed, and a launch that ends before it would start GTK (--version) prints none. */
#pragma once

#include <link.h>

#include "prepare-toolkit.h"

/* In the prepared child, once its toolkit (tk; gtk, a dlopen handle of its library) has started:
 * keeps the locale GTK set, and points GtkApplication's local_command_line and startup at functions
 * that start it for the program. Returns NULL, or why not (GtkApplication is not as this file knows
 * it). */
const char *toolkit_start_keep(enum toolkit tk, void *gtk);

/* At the launch, before the program is loaded: the C locale, which exec starts a program in; what
 * the toolkit wrote on stdout and on stderr as it started (the memfds output, closed) is held for
 * the program's start of its toolkit. */
void toolkit_start_defer(int output[2]);

/* Once the program is loaded: its references, and those of every library that links the toolkit,
 * to the functions that start GTK go to functions that start it for the program first. Returns 0
 * or a negative errno. */
int toolkit_start_route(const struct link_map *program);
