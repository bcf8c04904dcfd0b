/* SPDX-License-Identifier: MIT */
/* Framework warm-up (--warm-up STEP,...): after preloading, the zygote runs well-known initialisation
 * that every launch of its programs would otherwise repeat after main, so that its children find it
 * done. Each step is a call, with no argument, of a function of a library the zygote has loaded.
 * Known steps have names; LIBRARY:FUNCTION names a step of the user's own framework.
 * A step runs in a throwaway child first and is refused, with its reason, if it starts a thread,
 * opens a socket (it would connect to something every child then shares), or fails. */
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

/* Runs each step (tested first); ret[i] (caller's array of steps->n) says what became of it. */
void warm_up_run(const struct string_list *steps, struct warm_up_result *ret);
