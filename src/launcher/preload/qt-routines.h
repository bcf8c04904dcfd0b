/* SPDX-License-Identifier: MIT */
/* Startup routines that libraries loaded for other programs gave the program's Qt.
 *
 * Qt runs, as each QCoreApplication starts, every routine a library added with qAddPreRoutine (what
 * Q_COREAPP_STARTUP_FUNCTION makes a library's constructor do). In a zygote, the constructors of
 * every preloaded library ran, so a Qt the programs share holds the routines of libraries that a
 * program served from it never links: they would run in it, where under exec they are not there
 * (KI18n's loads Qt's translations: a Qt 5 tool's --help came out in German where exec printed
 * English, a new user's trial, 2026-12-02). Such a program is exec'd. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "string-list.h"

/* Whether any object loaded in this process adds a Qt startup routine (found once). */
bool qt_routines_any(void);

/* NULL, or why the program (the file dev/ino, whose own objects are its libraries and what it loads
 * after main) would run a Qt startup routine of a library not its own (written to buf). */
const char *qt_routines_verdict(dev_t dev, ino_t ino, const struct string_list *libs,
                                const struct string_list *after_main, char *buf, size_t size);
