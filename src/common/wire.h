/* SPDX-License-Identifier: MIT */
/* Moving bytes and file descriptors over the Unix socket. No logging; errors are negative errnos. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "protocol.h"

/* Sends one whole message (header, payload, fds attached to its first byte). Retries on EINTR and
 * partial writes; with `nonblock`, gives up with -EAGAIN instead of waiting for buffer space. */
int hs_send_message(int sock, enum hs_message_type type, const void *payload, size_t size, const int *fds,
                    size_t nfds, int nonblock);

/* Sends a DECLINED or ERROR message: `code` and up to HS_MAX_TEXT bytes of `text`. Never blocks. */
int hs_send_reason(int sock, enum hs_message_type type, int code, const char *text);

/* One recvmsg into buf; fds that arrive with it are appended to fds[*nfds] (close-on-exec set).
 * Returns bytes read (0 at end of stream) or a negative errno. Too many fds is -EMSGSIZE, with the
 * surplus closed. */
ssize_t hs_recv_some(int sock, void *buf, size_t len, int *fds, size_t max_fds, size_t *nfds);

/* Blocking read of one whole message whose payload fits in `max`; fds as for hs_recv_some.
 * Returns 0, -ECONNRESET at a clean end of stream, or a negative errno. */
int hs_recv_message(int sock, struct hs_header *ret_header, void *payload, size_t max, int *fds,
                    size_t max_fds, size_t *nfds);

/* As hs_recv_message, for a payload of any size up to HS_MAX_PAYLOAD, returned malloc'ed. */
int hs_recv_message_alloc(int sock, struct hs_header *ret_header, void **ret_payload, int *fds, size_t max_fds,
                          size_t *nfds);

/* Waits until sock is readable (or at its end) for at most timeout_ms (-1: no limit). Returns 0,
 * -ETIMEDOUT, or a negative errno. */
int hs_wait_readable(int sock, int timeout_ms);

void hs_close_fds(int *fds, size_t n);
