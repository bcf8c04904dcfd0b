/* SPDX-License-Identifier: MIT */
/* What a warm program's constructors register to run at exit, made again in each of its launches.
 *
 * A warm program's constructors run once, in the daemon. What they register to run at exit (a C++
 * static object's destructor, through __cxa_atexit; atexit, on_exit, at_quick_exit) would then be
 * in the C library's lists of every child, whatever program it runs: a C program served beside a
 * warm C++ one ran that one's destructors at its exit, and died in one of them (it wrote to the C++
 * program's own copy of std::cout). So while they run in the daemon, the program's own references
 * to the registration functions point at a recorder, which registers nothing; each child that runs
 * the program makes the recorded registrations itself, in their order, where exec's loader would
 * have run the constructors. Its other children have none.
 *
 * A thread-local object's destructor (__cxa_thread_atexit) belongs to the daemon's thread and
 * cannot be made again; nor can the program's own destructors (DT_FINI_ARRAY entries beyond the
 * compiler's one), which the loader runs at the exit of every process the program is loaded in.
 * A program with either is not warm, nor one that registers fork handlers (pthread_atfork), which
 * would run at every fork of the daemon and in each of its children. What a library's code
 * registers on the program's behalf is not seen. */
#pragma once

#include <link.h>
#include <stdbool.h>
#include <stddef.h>

enum exit_registration_kind { EXIT_AT_EXIT, EXIT_ON_EXIT, EXIT_AT_QUICK_EXIT };

struct exit_registration {
        enum exit_registration_kind kind;
        void *function, *argument, *object; /* object: the registering object's __dso_handle */
};

struct exit_registrations {
        struct exit_registration *items;
        size_t n, allocated;
        unsigned unrepeatable; /* thread-local destructors' registrations, which were dropped */
        unsigned atfork;       /* fork handlers' registrations (pthread_atfork), which were dropped */
        int error;             /* -ENOMEM when a registration could not be stored */
};

/* Before the program's constructors run: points the program's references to the registration
 * functions at a recorder that stores each in *into (until exit_registrations_stop). Returns 0 or a
 * negative errno. */
int exit_registrations_record(const struct link_map *program, struct exit_registrations *into);

/* After they ran: points the references back where the loader had pointed them, for main's own. */
int exit_registrations_stop(const struct link_map *program);

/* In a child that runs the program, where its constructors would have run: makes the recorded
 * registrations, in their order. */
void exit_registrations_replay(const struct exit_registrations *r);

void exit_registrations_done(struct exit_registrations *r);

/* Whether the program has destructors of its own (more DT_FINI_ARRAY entries than the compiler's
 * one, crtbegin's __do_global_dtors_aux): the loader runs those at the exit of every child too. */
bool exit_registrations_destructors(const struct link_map *program);
