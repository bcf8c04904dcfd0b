/* SPDX-License-Identifier: MIT */
/* What /proc/PID/cmdline and /proc/PID/environ show for a served program. */
#pragma once

#include "protocol.h"

/* Points the kernel's argument and environment areas at the request's strings, which the protocol
 * already lays out exactly as exec does (arguments, then environment, each NUL-terminated), so that
 * ps, pgrep and the program itself read the client's command line and not the daemon's.
 * Best effort: needs PR_SET_MM_MAP (CONFIG_CHECKPOINT_RESTORE); returns a negative errno if refused. */
int proc_title_set(const struct hs_launch_request *req);

/* Points /proc/PID/auxv (the kernel's copy of the auxiliary vector) at the one the program was given
 * (hs_entry_adopt_auxv): exec's shows the program's entry point, program headers and name, and a
 * served program's showed headstartd's. Call once the vector was adopted. Best effort as above. */
int proc_auxv_set(void);
