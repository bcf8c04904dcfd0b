/* SPDX-License-Identifier: MIT */
/* Throwaway children: where the daemon first tries what could harm it (loading a program, a
 * warm-up step, a library), and reads the verdict. */
#pragma once

#include <sys/types.h>

/* fork(), with the child bound to this process: it is killed when we end. A stop kills a zygote
 * that is still starting (supervisor.c), and a trial it was waiting for must not outlive it. */
pid_t throwaway_fork(void);
