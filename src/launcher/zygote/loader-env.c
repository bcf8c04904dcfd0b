/* SPDX-License-Identifier: MIT */
#include "loader-env.h"

#include <stdlib.h>
#include <string.h>

bool loader_env_is_loader_var(const char *e) {
        return strncmp(e, "LD_", 3) == 0 || strncmp(e, "MALLOC_", 7) == 0 || strncmp(e, "GLIBC_TUNABLES=", 15) == 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

char **loader_env_snapshot(char *const *envp) {
        size_t n = 0;
        for (size_t i = 0; envp[i]; i++)
                n += loader_env_is_loader_var(envp[i]);
        char **v = calloc(n + 1, sizeof(char *));
        if (!v)
                return NULL;
        size_t k = 0;
        for (size_t i = 0; envp[i]; i++)
                if (loader_env_is_loader_var(envp[i]) && !(v[k++] = strdup(envp[i]))) {
                        loader_env_free(v);
                        return NULL;
                }
        qsort(v, n, sizeof(char *), cmp_str);
        return v;
}

void loader_env_free(char **snapshot) {
        if (!snapshot)
                return;
        for (size_t i = 0; snapshot[i]; i++)
                free(snapshot[i]);
        free(snapshot);
}

bool loader_env_matches(char *const *snapshot, char *const *envp, const char **ret_differs) {
        size_t want = 0, got = 0;
        while (snapshot[want])
                want++;
        for (size_t i = 0; envp[i]; i++) {
                if (!loader_env_is_loader_var(envp[i]))
                        continue;
                got++;
                if (!bsearch(&envp[i], snapshot, want, sizeof(char *), cmp_str)) {
                        *ret_differs = envp[i];
                        return false;
                }
        }
        if (got != want) {
                /* Something the daemon has is missing from the client: find it for the message. */
                *ret_differs = want > 0 ? snapshot[0] : "";
                for (size_t k = 0; k < want; k++) {
                        bool found = false;
                        for (size_t i = 0; envp[i] && !found; i++)
                                found = strcmp(envp[i], snapshot[k]) == 0;
                        if (!found) {
                                *ret_differs = snapshot[k];
                                break;
                        }
                }
                return false;
        }
        return true;
}
