/* SPDX-License-Identifier: MIT */
/* The environment variables a GTK program's toolkit reads as a prepared child starts it: a program
 * that sets one before its toolkit starts would see a toolkit that did not read it. */
#pragma once

#include <stddef.h>

/* The first such variable that the size bytes name as a program passes one to setenv, putenv or
 * unsetenv: a string that is its name ("GTK_THEME") or ends with it (a linker shares one string's
 * tail with another's), or such a name and '=' ("GTK_THEME=Adwaita"). An enum's or an assertion's
 * text that only begins like one ("GTK_IS_WIDGET (widget)") is not. NULL when none. */
const char *toolkit_variable_in(const char *bytes, size_t size);
