/* SPDX-License-Identifier: MIT */
/* What libraries loaded for other programs gave the program's Qt from their constructors.
 *
 * In a zygote, the constructors of every preloaded library ran, so a Qt the programs share holds
 * what each library's constructor registered with it, whether a program served from it links that
 * library or not:
 * - startup routines (qAddPreRoutine, what Q_COREAPP_STARTUP_FUNCTION makes a constructor call),
 *   which Qt runs in every QCoreApplication: KI18n's loads Qt's translations, and a Qt 5 tool's
 *   --help came out in German where exec printed English (a new user's trial, 2026-12-02);
 * - resources (qRegisterResourceData, what rcc's code calls for a library built with a .qrc): Qt
 *   reads a path from the first registration that has it, so the library's, registered in the
 *   zygote, hides the program's own at the same path, and its files show in the folder's listing.
 * Such a program is exec'd. The resources of Qt's own modules and of the plugins in Qt's folders
 * (platform, style, QML plugins) are not counted: they are named by their module (":/qt-project.org/",
 * ":/qt/qml/QtQuick/"...), which a program's own resources do not use. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "string-list.h"

/* Whether any object loaded in this process registers something with Qt as it loads (found once). */
bool qt_registrations_any(void);

/* NULL, or why the program (the file dev/ino, whose own objects are its libraries and what it loads
 * after main) would be given what a library not its own registered with its Qt (written to buf). */
const char *qt_registrations_verdict(dev_t dev, ino_t ino, const struct string_list *libs,
                                     const struct string_list *after_main, char *buf, size_t size);
