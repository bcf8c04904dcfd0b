/* SPDX-License-Identifier: MIT */
/* How headstartd tells headstart-pind about the launches it serves, so that pinning follows what is
 * launched: one datagram per launch, on a Unix datagram socket that headstart-pind binds, holding
 * the absolute path of the program (no terminating NUL needed). Fire and forget: headstartd never
 * waits, and nothing is sent when no headstart-pind listens. docs/protocol.md. */
#pragma once

/* Where the system unit's headstart-pind listens (RuntimeDirectory=headstart-pind). */
#define HS_LAUNCH_REPORT_SOCKET "/run/headstart-pind/launches.socket"
