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
