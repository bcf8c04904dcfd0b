/* SPDX-License-Identifier: MIT */
/* What the supervisor's and a zygote's event loops share. */
#pragma once

#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds: deadlines and timers. */
uint64_t now_ms(void);

/* Blocks SIGTERM, SIGINT and SIGHUP (stop, stop, refresh) and returns a non-blocking signalfd that
 * reads them, or a negative errno. Ignores SIGPIPE: we report write errors ourselves, and a child
 * restores the client's disposition. */
int stop_signals_open(void);
