/* SPDX-License-Identifier: MIT */
/* What a warm program's constructors change in the process itself, outside any library's data.
 *
 * A warm program's constructors run once, in the daemon. What they set in the process (a signal's
 * handler or SIGPIPE ignored, the signal mask, the umask, the working directory, resource limits,
 * a file they opened, a timer, no_new_privs, the scheduling, the C library's locale, the
 * floating-point environment) is the daemon's from then on, and each launch's child resets it to
 * the client's (signals, mask, umask, directory, limits, fds) or keeps the daemon's for every
 * program it serves (a locale, an atfork handler, flush-to-zero, no_new_privs, which then made the
 * daemon decline every client). Under exec the program's
 * main sees what its constructors set, and no other program does. So a program is loaded warm only
 * if, loaded in a throwaway child, it changed none of them (a new user's trial, 2026-11-29). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct process_state;

/* In a throwaway child, before process_state_take: gives every signal but the faults and SIGALRM (its
 * deadline) a handler of its own, unblocks every signal and sets an unusual umask, so that a
 * constructor that ignores SIGPIPE, blocks a signal or sets the umask is seen even where the daemon
 * already had that setting (a zygote ignores SIGPIPE and blocks the signals it reads). */
void process_state_neutral(void);

/* Takes what it compares; NULL when out of memory. */
struct process_state *process_state_take(void);

/* What differs now from s (a short description), or NULL. */
const char *process_state_changed(const struct process_state *s);

void process_state_free(struct process_state *s);
