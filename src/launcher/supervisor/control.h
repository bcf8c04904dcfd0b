/* SPDX-License-Identifier: MIT */
/* The channel between the supervisor and one zygote: short text messages on a SOCK_SEQPACKET
 * socket pair, one message per packet.
 *   zygote -> supervisor: "ready" (preloaded, pool filled, accepting), "refresh REASON", "leaving"
 *                         (a stop signal from someone else: it no longer accepts, and finishes)
 *   supervisor -> zygote: "retire" (stop accepting, finish what was accepted, exit), "ping"
 *   zygote -> supervisor: "pong", the answer to "ping": its loop still turns
 * A zygote whose channel closes retires too. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#define CONTROL_READY "ready"
#define CONTROL_RETIRE "retire"
#define CONTROL_REFRESH "refresh "
#define CONTROL_LEAVING "leaving"
#define CONTROL_PING "ping"
#define CONTROL_PONG "pong"
#define CONTROL_MAX 512

int control_send(int fd, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* One message into buf, NUL-terminated. Returns its length, 0 when the other side has gone, or a
 * negative errno (-EAGAIN: nothing there). */
ssize_t control_recv(int fd, char buf[static CONTROL_MAX]);
