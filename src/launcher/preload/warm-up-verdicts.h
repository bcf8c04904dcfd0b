/* SPDX-License-Identifier: MIT */
/* The warm-up steps whose trial passed, kept beside the learned file from one zygote's start to the
 * next with what a step's behaviour depends on: the files of every object loaded in the process
 * and its environment (less what the service manager sets anew at each start). A step kept under
 * the same key runs without a new trial: a throwaway child of a zygote that has just preloaded its
 * libraries cost the virtual device's boot 0.37 s (docs/results.md). */
#pragma once

#include <stdbool.h>

#include "string-list.h"

struct warm_up_verdicts {
        char key[17]; /* this process's, in hex */
        struct string_list passed; /* steps whose trial passed under the kept key */
};

/* Reads the file at path (missing, another user's or made under another key: nothing kept). */
void warm_up_verdicts_load(struct warm_up_verdicts *v, const char *path);
bool warm_up_verdicts_passed(const struct warm_up_verdicts *v, const char *step);
/* Removes the file, before a kept step runs: a zygote that dies in it leaves no verdict behind.
 * Returns false when it cannot (the step must then be tried). */
bool warm_up_verdicts_forget(const char *path);
/* Writes the steps that ran into the file, under this process's key. */
void warm_up_verdicts_save(const struct warm_up_verdicts *v, const char *path, const struct string_list *ran);
void warm_up_verdicts_done(struct warm_up_verdicts *v);
