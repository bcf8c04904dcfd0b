/* SPDX-License-Identifier: MIT */
/* Framework warm-up (--warm-up STEP,...): after preloading, the zygote runs well-known initialisation
 * that every launch of its programs would otherwise repeat after main, so that its children find it
 * done. Each step is a call, with no argument, of a function of a library the zygote has loaded.
 * Known steps have names; LIBRARY:FUNCTION names a step of the user's own framework.
 * A step runs in a throwaway child first and is refused, with its reason, if it starts a thread,
 * opens a socket (it would connect to something every child then shares), or fails; a step that
 * passed at an earlier start, with nothing it depends on changed, is not tried again. */
#pragma once

#include <stddef.h>

#include "string-list.h"

struct warm_up_result {
        const char *step;
        char *refused; /* why it was not run here; NULL when it was */
};

/* The names --warm-up accepts, for messages: "fontconfig, gdk-pixbuf". */
const char *warm_up_known(void);
/* Whether `name` is a step. */
int warm_up_check_name(const char *name);

/* Runs each step, tested first unless its trial passed at an earlier start (warm-up-verdicts.h,
 * kept in verdicts_path); ret[i] (caller's array of steps->n) says what became of it. Returns 0, or
 * -EAGAIN when a step not tried again started a thread or opened a socket here after all: this
 * process must not fork, and a fresh one tries every step first (the kept verdicts are gone). */
int warm_up_run(const struct string_list *steps, const char *verdicts_path, struct warm_up_result *ret);
