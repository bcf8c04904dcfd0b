/* SPDX-License-Identifier: MIT */
/* What exec gives a program from the process that starts it, and a child of the zygote would not
 * have: the rights and confinement of the process (its user and group IDs and supplementary groups,
 * capabilities, no_new_privs, seccomp filters), the namespaces it sees, its execution domain
 * (personality: setarch), its I/O priority (ionice) and OOM score adjustment (choom). A child forked
 * from the zygote has the zygote's. A client that differs in any of them is declined, and execs the
 * program itself, as it would have: otherwise a sandbox of the daemon's own user (a namespace, a
 * seccomp filter, capabilities dropped, a group left) would run programs outside itself through us.
 *
 * Read from the kernel for the process that connected (SO_PEERCRED), as it accepts the connection,
 * never from what the client says. */
#pragma once

/* NULL when the process that connected on fd runs as the zygote does in all of the above, else why
 * not (a static string). One whose state cannot be read, or that is gone, is refused. */
const char *client_context_refusal(int fd);
