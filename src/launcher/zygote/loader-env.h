/* SPDX-License-Identifier: MIT */
/* The environment variables that change what the dynamic loader or malloc do at start-up
 * (LD_*, GLIBC_TUNABLES, MALLOC_*). The daemon's libraries were loaded under its own values, so a
 * client whose values differ must get exec instead. */
#pragma once

#include <stdbool.h>

bool loader_env_is_loader_var(const char *entry);

/* A sorted, NULL-terminated copy of the loader variables in envp. NULL on allocation failure. */
char **loader_env_snapshot(char *const *envp);
void loader_env_free(char **snapshot);

/* Whether envp holds exactly the loader variables of the snapshot. On false, *ret_differs names one
 * variable that differs (points into envp or the snapshot). */
bool loader_env_matches(char *const *snapshot, char *const *envp, const char **ret_differs);
