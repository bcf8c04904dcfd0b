/* SPDX-License-Identifier: MIT */
/* getenv and secure_getenv, ahead of the C library's (libheadstart-entry.so comes before it in the
 * daemon's lookup order, entry.h): a hook the zygote sets sees each name asked for while it loads.
 *
 * A library that reads a variable in its constructor (libgomp's OMP_NUM_THREADS, OpenSSL's
 * OPENSSL_ia32cap, GLib's G_DEBUG) reads it once, in the daemon, as the daemon loads it: a served
 * program keeps what the daemon's environment said. The zygote notes those names as it loads and
 * sends to exec a launch whose environment differs in one (zygote/read-at-load.h). Every getenv of the
 * process comes here, but costs the C library's and a load of the hook when none is set. */
#pragma once

/* Calls on_read(name, caller) at each getenv and secure_getenv in this process, caller being the
 * code that called (its return address); NULL: none. */
void hs_entry_on_getenv(void (*on_read)(const char *name, const void *caller));
