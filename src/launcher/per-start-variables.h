/* SPDX-License-Identifier: MIT */
/* The environment variables the service manager gives each start of a service anew
 * (INVOCATION_ID...): what a launch or a start is compared by leaves them out. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

extern const char *const per_start_variables[];
extern const size_t n_per_start_variables;

/* The variable's name when the environment entry ("NAME=value") is one of them, with its length in
 * *ret_len; NULL otherwise. */
const char *per_start_name(const char *entry, size_t *ret_len);
bool per_start_variable(const char *entry);
