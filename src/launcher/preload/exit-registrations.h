/* SPDX-License-Identifier: MIT */
/* What a warm program's constructors leave to run at exit.
 *
 * A warm program's constructors run once, in the daemon, and what they register to run at exit
 * (a C++ static object's destructor, through __cxa_atexit; atexit, on_exit, at_quick_exit; a
 * thread-local object's destructor) is then in the C library's lists of every child, whatever
 * program it runs: a C program served beside a warm C++ one ran that one's destructors at its exit,
 * and died in one of them (it wrote to the C++ program's own copy of std::cout). So a program is
 * loaded warm only if, loaded in a throwaway child, its constructors registered nothing through its
 * own references to those functions, and it has no destructors of its own, which the loader runs at
 * the exit of every process it is loaded in. What they register through a library's code is not
 * seen. */
#pragma once

#include <link.h>
#include <stdbool.h>

/* In the throwaway child, before the program's constructors run: points the program's references
 * to the registration functions at a counter, which registers nothing. Returns 0 or a negative
 * errno. */
int exit_registrations_count(const struct link_map *program);

/* How many registrations the counter has seen. */
unsigned exit_registrations_counted(void);

/* Whether the program has destructors of its own (more DT_FINI_ARRAY entries than the compiler's
 * one, crtbegin's __do_global_dtors_aux): the loader runs those at the exit of every child too. */
bool exit_registrations_destructors(const struct link_map *program);
