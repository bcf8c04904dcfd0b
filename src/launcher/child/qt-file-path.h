/* SPDX-License-Identifier: MIT */
/* Qt's idea of the program's own file, given to it before main.
 *
 * Qt answers QCoreApplication::applicationFilePath and applicationDirPath from /proc/self/exe, which
 * is the daemon in a served program: focuswriter looked for its themes and translations beside
 * headstartd, and every Qt window on Wayland of a program that names no desktop file took the
 * app_id "headstartd" (a new user's trial, 2026-11-29). Qt keeps its answer in a static that its
 * private API sets (QCoreApplicationPrivate::setApplicationFilePath, exported by Qt 5 and Qt 6 for
 * Qt's own tools) and reads /proc/self/exe only while that is empty. The child sets it to the file
 * exec would have run, the path /proc/self/exe would show. */
#pragma once

/* Sets the program's file (as /proc/self/exe names it) in each Qt Core loaded; none loaded, nothing
 * to do. Returns 0, -ENOTSUP when a loaded Qt Core lacks the calls, -EILSEQ for a path that is not
 * UTF-8 (which Qt would decode so on Linux). The launch then fails before main: the client execs. */
int qt_file_path_set(const char *path);
