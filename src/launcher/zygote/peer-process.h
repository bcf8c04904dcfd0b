/* SPDX-License-Identifier: MIT */
/* Which process is at the other end of a client's connection, as a pidfd, so that what the daemon
 * reads of it (client-context.c) is of that process and no other. Linux 6.5 hands the peer's pidfd
 * over (SO_PEERPIDFD). Before it, only the pid it connected with is known (SO_PEERCRED), and that
 * pid may be another process's by the time the launch is read: the client could hand its
 * connection to a child and end, and its pid be used again by a process confined otherwise. So
 * there the process found by that pid must also hold the client's end of the connection, which the
 * kernel's socket diagnostics name (sock_diag, UNIX_DIAG_PEER; Debian's kernels have it). */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* A pidfd of the process at the other end of fd, and its pid; -1 when it is gone, or when (before
 * Linux 6.5) the process with its pid does not hold the connection. A kernel without Unix socket
 * diagnostics (or qemu-user) cannot tell that: there the pid alone is taken. */
int peer_process_open(int fd, pid_t *ret_pid);

/* On a kernel before 6.5, asks the socket diagnostics once on the listening socket, so that the
 * kernel loads them (a module on Debian: a modprobe, 0.1 s and more on a slow board) as the zygote
 * starts rather than during its first launch, the home screen's at boot. */
void peer_process_setup(int listen_fd);

/* The same by pid alone, as on kernels before 6.5 (kept apart for its test). */
int peer_process_open_by_pid(int fd, pid_t pid);

/* The inode of the socket at the other end of the Unix socket fd into *ret, or a negative errno
 * (-ENOENT, -EPROTONOSUPPORT: the kernel has no Unix socket diagnostics; -ENOTCONN: no peer). */
int peer_socket_inode(int fd, ino_t *ret);

/* Whether process pid has a descriptor of the socket with that inode. */
bool process_holds_socket(pid_t pid, ino_t socket_inode);
