/* SPDX-License-Identifier: MIT */
/* Throwaway children: where the daemon first tries what could harm it (loading a program, a
 * warm-up step, a library), and reads the verdict. */
#pragma once

#include <sys/types.h>

/* How long a throwaway child may take by default: a constructor that never returns must not hold a
 * zygote's start (and every client waiting for it) for ever. Ended by SIGALRM after that. */
#define THROWAWAY_DEFAULT_DEADLINE_S 30

/* The deadline of the children forked from now on (headstartd --trial-timeout): a board that loads
 * slowly at boot may need longer, a product that would rather start without a slow object, shorter. */
void throwaway_set_deadline(unsigned seconds);
unsigned throwaway_deadline(void);

/* fork(), with the child bound to this process: it is killed when we end. A stop kills a zygote
 * that is still starting (supervisor.c), and a trial it was waiting for must not outlive it. The
 * child ends by SIGALRM after throwaway_deadline(). */
pid_t throwaway_fork(void);

/* A trial in a throwaway child whose verdict cannot be its exit status: the code on trial may call
 * exit() itself (a constructor that ends the process passed as fine when its exit status was the
 * verdict). The child says its verdict with throwaway_report, a byte and a detail. */
#define THROWAWAY_ENDED 'E' /* the child ended without a verdict; how, in detail */
#define THROWAWAY_KILLED '!' /* a signal ended it (its name in detail); SIGALRM: the deadline */

/* In the trial child: writes the verdict and detail (may be NULL) on report, and ends. */
_Noreturn void throwaway_report(int report, char verdict, const char *detail);

/* Runs trial(arg, report) in a throwaway child, which ends it by throwaway_report, and waits for it. Returns its verdict byte, or
 * THROWAWAY_ENDED ("exit status N" in detail) or THROWAWAY_KILLED (the signal's name, or "the
 * deadline" for SIGALRM), or a negative errno when it could not run. */
int throwaway_trial(void (*trial)(void *arg, int report), void *arg, char *detail, size_t size);
