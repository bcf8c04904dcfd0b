/* SPDX-License-Identifier: MIT */
/* headstartd --check: the daemon's own verdict on programs, for `headstart check`. */
#pragma once

#include "options.h"

/* For each program in o->check, prints one JSON object on stdout: how the daemon would serve it if
 * it were registered, or why it would send it to exec. Each program is judged in a child of its
 * own that preloads its libraries and prepares its image exactly as a zygote does. Returns 0, or a
 * negative errno when a program could not be judged (its line says why). */
int check_run(const struct daemon_options *o);
