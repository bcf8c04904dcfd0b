/* SPDX-License-Identifier: MIT */
/* Loading a --warm program into the daemon: tried first in a throwaway child, whose verdict says
 * whether its constructors, run once here, would leave anything that exec would not (a thread, a
 * shared library's data, the process's own settings, work for the exit, output...). */
#pragma once

#include <stddef.h>

/* Loads a program image into the daemon with every relocation done and its constructors c run with
 * the daemon's own arguments argv (a "warm" program), after checking in a throwaway child that
 * loading it starts no thread (-EDEADLK) and changes nothing in the libraries every program shares
 * (-EBUSY, shared-state.h), nor in the process, nor in the program's copies of library variables
 * that plan fills at each launch. What the constructors registered to run at exit goes into exits, for
 * the program's launches to make (exit-registrations.h). Another negative errno if it cannot be
 * loaded; the reason is logged and written to why. */
struct bind_plan;
struct exit_registrations;
struct program_constructors;
int warm_program_load(const char *program, const char *image, const struct program_constructors *c,
                      const struct bind_plan *plan, struct exit_registrations *exits, char *const argv[], char *why,
                      size_t size);
