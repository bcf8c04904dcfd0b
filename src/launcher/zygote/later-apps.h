/* SPDX-License-Identifier: MIT */
/* --app-later: programs whose libraries the first zygote leaves out, so that it is ready sooner for
 * the programs a system starts with. At boot a device's CPUs are the bottleneck of its home screen's
 * first frame, and the libraries of an app nobody opens yet took from it (on the virtual device, 13
 * of the 81 libraries the zygote loaded were the second app's GTK 3: its start came 0.6 s later).
 * Once the start is over (this zygote's first launch has settled and a CPU is spare, or enough time
 * has passed) the zygote asks for a fresh one, which loads every program's libraries and serves them
 * all; until then, the later programs' clients exec them. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpu-spare.h"
#include "launch-settle.h"

struct server;

struct later_apps {
        unsigned deferred;    /* programs left out for the next zygote; 0: nothing to wait for */
        uint64_t check_at;    /* the next look (CLOCK_MONOTONIC ms); 0: asked already, or nothing to do */
        uint64_t launched_ms; /* this zygote's first launch; 0: none yet */
        struct launch_settle settle;
        struct cpu_spare cpu;
        bool waits_logged;
};

/* Once the zygote serves, with `deferred` programs left out (0: none, nothing happens). */
void later_apps_start(struct server *s, unsigned deferred);
/* A launch began, as pid: the first one is what the start waits for. */
void later_apps_note_launch(struct server *s, pid_t pid);
/* Milliseconds until the next look (0: now), or -1 for none. */
int later_apps_in_ms(const struct server *s);
/* Looks: once the start is over, asks for the zygote that loads the later programs. */
void later_apps_check(struct server *s);
