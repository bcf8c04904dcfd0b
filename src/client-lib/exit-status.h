/* SPDX-License-Identifier: MIT */
/* The exit status of a program the client does not parent, from its pidfd (Linux 6.15). */
#pragma once

/* The program's wait status once whoever inherited it (init, or a subreaper) has reaped it; -1 on
 * kernels before 6.15, or when nobody reaps it within 5 s. Call it once the pidfd is readable. */
int exit_status_from_pidfd(int pidfd);
