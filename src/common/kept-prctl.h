/* SPDX-License-Identifier: MIT */
/* What prctl set on a process that fork and exec both keep for its children and programs, and no
 * /proc file shows (tried on Linux 6.18), so that only the process itself can read it: the client
 * library declines a launch from a caller that has one (its program under exec would have it, a
 * child of the daemon would not), and the zygote declines every launch while it has one itself (its
 * children would all have it). libc only; never logs. */
#pragma once

/* NULL when none is set, else what the process does, worded to follow "the caller" or "the
 * daemon": "refuses memory both writable and executable (...)". Each is one system call; a kernel
 * without one (EINVAL) has its default. */
const char *kept_prctl_inherited(void);
