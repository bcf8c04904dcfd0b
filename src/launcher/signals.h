/* SPDX-License-Identifier: MIT */
/* The signals of the daemon's processes, read through a signalfd: the supervisor's few, and the
 * zygote's, which its own programs can send. */
#pragma once

#include <stdbool.h>

/* Blocks SIGTERM, SIGINT and SIGHUP (stop, stop, refresh) and returns a non-blocking signalfd that
 * reads them, or a negative errno. Ignores SIGPIPE: we report write errors ourselves, and a child
 * restores the client's disposition. */
int stop_signals_open(void);

/* For a zygote, whose served programs can signal it (their getppid() is the zygote): blocks every
 * signal that sent with kill() would end or stop the process, and returns a non-blocking signalfd
 * that reads them all, so that the zygote decides who may stop it. SIGCHLD comes through it too:
 * it is how the zygote learns that a program stopped (a pidfd tells only its end). The signals of real faults
 * (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS) stay as they are: blocked, a fault would kill
 * the process anyway, and the sanitizers handle them. */
int zygote_signals_open(void);

/* While a zygote starts it has served no one, and its preload, warm-up or scan of a large library
 * for pointers can take seconds (more under the sanitizers): with `at_once`, SIGTERM (the
 * supervisor's stop) ends it by its default action instead of waiting in the signalfd. Taken back
 * before the zygote forks its pool and says it is ready: from then on a stop waits for the
 * programs it serves. */
void zygote_stop_at_once(bool at_once);
