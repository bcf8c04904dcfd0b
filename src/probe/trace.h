/* SPDX-License-Identifier: MIT */
/* The probe's output: JSON lines, one record per event, buffered in memory and appended to the
 * file named by HEADSTART_PROBE_OUTPUT (or written to the descriptor in HEADSTART_PROBE_FD). The
 * file is opened only for each flush, so the program never sees an extra descriptor. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Reads the destination from the environment; false when none is named (the probe stays quiet). */
bool trace_open(void);

/* CLOCK_MONOTONIC in nanoseconds, the clock every record and HEADSTART_LAUNCH_START_NS use. */
uint64_t trace_now(void);

/* A record: trace_begin, any number of fields, trace_end. Strings are escaped and cut at 4 KiB. */
void trace_begin(const char *event, uint64_t t);
void trace_str(const char *key, const char *value); /* NULL writes null */
void trace_u64(const char *key, uint64_t value);
void trace_null(const char *key);
void trace_end(void);

/* Writes what is buffered. Records a forked child inherited from its parent are dropped: the
 * parent writes them itself. */
void trace_flush(void);
