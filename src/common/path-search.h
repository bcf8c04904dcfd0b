/* SPDX-License-Identifier: MIT */
/* The file execvp(3) would run for a program name, for the client (which must name the same file
 * the exec it replaces would run) and the daemon (--app NAME) alike. libc only; never logs. */
#pragma once

#include <stddef.h>

/* Writes into buf the absolute path of name if it has a slash (relative to the working directory),
 * else of the first regular file that we may execute named name in $PATH's directories, in order:
 * an empty entry is the working directory, and PATH unset is glibc's default "/bin:/usr/bin" (glibc
 * 2.36 execvp; a set but empty PATH is one empty entry). Symlinks stay as they are. Returns 0,
 * -ENOENT when there is none, or -ENAMETOOLONG. */
int hs_find_program(const char *name, char *buf, size_t size);
