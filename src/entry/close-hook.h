/* SPDX-License-Identifier: MIT */
/* dlclose, ahead of the C library's (libheadstart-entry.so comes before it in the daemon's lookup
 * order, entry.h): a hook the daemon's child sets runs before each object is closed.
 *
 * The child learns what its program loaded after main from its link map at exit (after-main.h). A
 * program can close such an object before it exits: Qt closes its display as it ends, and Mesa then
 * closes its GL driver (swrast_dri.so and the libraries only it needs), which were then never
 * learned, and every served launch of a Qt program loaded the driver again. Every dlclose of the
 * process comes here, the program's and its libraries', whichever scope they were loaded in. */
#pragma once

/* Calls before() at each dlclose in this process, before the C library's; NULL: none. */
void hs_entry_before_dlclose(void (*before)(void));
