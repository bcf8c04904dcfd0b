/* SPDX-License-Identifier: MIT */
/* The daemon's own directories (the socket's, the cache of PIE copies): what is in them is trusted,
 * so nobody else may be able to put anything there. */
#pragma once

/* Creates `path` (0700) if it is missing, then opens it: it must be a directory (not a symlink to
 * one), owned by our effective user, and writable by nobody else. Returns the directory fd, or a
 * negative errno; -EPERM with *ret_why saying what is wrong. */
int private_dir_open(const char *path, const char **ret_why);

/* Opens the state file `path` for reading if it is ours: a regular file (not a symlink), owned by our
 * effective user and writable by nobody else, since another user's could choose what we load or
 * run. Returns the fd; -ENOENT when it is missing; another negative errno with *ret_why saying
 * what is wrong. */
int private_file_open(const char *path, const char **ret_why);

/* Replaces the state file `path` whole: fill(fd, data) writes a new file (0600, beside it), which is
 * renamed over it, so that a reader never sees half of one. Returns 0, or a negative errno (from
 * fill, which returns one too); the new file is removed then. */
int private_file_replace(const char *path, int (*fill)(int fd, const void *data), const void *data);
