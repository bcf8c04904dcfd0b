/* SPDX-License-Identifier: MIT */
/* A zygote process (headstartd --zygote, started by the supervisor). */
#pragma once

#include "options.h"

/* Preloads, then serves launches on the socket the supervisor gave us (socket_path: its path,
 * beside which the cache and the learned objects live by default) until told to retire or stop.
 * argv: our own arguments, to start again with should a library fail to preload. */
int zygote_run(const struct daemon_options *o, char *const argv[], const char *socket_path);
