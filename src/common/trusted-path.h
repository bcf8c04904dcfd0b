/* SPDX-License-Identifier: MIT */
/* Whether a file that a daemon reads or loads could have been written by someone else: the rule of
 * ld.so's and systemd's trusted files. The file and every directory above it must be owned by the
 * daemon's user or by root, and none of them writable by its group or by other users, except a
 * sticky directory of root's such as /tmp: there others may add names but not remove or rename
 * ours, and the names below it are judged by their owners like the rest (one another user made
 * first is theirs, and refused).
 *
 * Symbolic links are followed: the link is judged by its owner (whoever made it chose where it
 * leads), and what it leads to is checked the same way, every directory of it from where it points.
 * The path is walked one component at a time; libc only; never logs. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Checks path (absolute, or relative to the working directory, whose own ancestors are then checked
 * too) for a daemon running as owner. Returns 0 when it is trusted; -EPERM when it is not, with why
 * (why_size bytes, PATH_MAX + 100 are enough) set to one line naming the component and the reason,
 * such as "/tmp is writable by other users (mode 1777)"; another negative errno when it cannot be
 * checked (-ENOENT, -ELOOP, -ENOTDIR, -ENAMETOOLONG...), why then untouched. */
int trusted_path_check(const char *path, uid_t owner, char *why, size_t why_size);

/* The same for the file already open as fd, which path names: the file is judged by fstat(fd), and it
 * must be the file that path leads to now (-EPERM otherwise, "... is not the file that was opened").
 * Open first, then check, then read from fd: what is read is what was checked. */
int trusted_path_check_fd(int fd, const char *path, uid_t owner, char *why, size_t why_size);

/* For the daemons' own use: NULL when path is trusted for our effective user, else buf (size bytes,
 * PATH_MAX + 100 are enough) holding why not, one line, whatever stopped the check. */
const char *trusted_path_refusal(const char *path, char *buf, size_t size);
