/* SPDX-License-Identifier: MIT */
/* A served program runs with its client's capabilities, as exec would give it them, where the daemon
 * has more: a daemon given CAP_SYS_NICE to apply --schedule (AmbientCapabilities= in its unit) serves
 * clients that have none. The zygote judges (client-context.h); the child, once it has applied the
 * schedule and before it loads the program, lowers its sets to the client's. A process can only
 * lower its own, so a client with a capability the daemon lacks, or another bounding set, is still
 * declined. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct capabilities {
        uint64_t inheritable, permitted, effective, ambient, bounding;
};

/* The sets of /proc/PID/status ("CapInh:" ... "CapAmb:" values, hexadecimal), in that order. */
bool capabilities_parse(const char *const hex[5], struct capabilities *ret);

/* Whether a process with `ours` can lower itself to exactly `theirs`: each set of theirs within ours,
 * the bounding set the same (dropping from it needs CAP_SETPCAP, which a daemon is not given). */
bool capabilities_can_lower(const struct capabilities *ours, const struct capabilities *theirs);

/* In the child: the calling process's sets become c's (0, or a negative errno). */
int capabilities_lower_to(const struct capabilities *c);
