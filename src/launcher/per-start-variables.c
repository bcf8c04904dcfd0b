/* SPDX-License-Identifier: MIT */
#include "per-start-variables.h"

#include <string.h>

/* Set by systemd for each start of a unit (systemd.exec(5)); none is named in GTK's, GLib's,
 * Pango's or fontconfig's libraries. */
const char *const per_start_variables[] = { "INVOCATION_ID", "JOURNAL_STREAM", "SYSTEMD_EXEC_PID", "MANAGERPID" };
const size_t n_per_start_variables = sizeof per_start_variables / sizeof per_start_variables[0];

const char *per_start_name(const char *entry, size_t *ret_len) {
        for (size_t i = 0; i < n_per_start_variables; i++) {
                size_t len = strlen(per_start_variables[i]);
                if (strncmp(entry, per_start_variables[i], len) == 0 && entry[len] == '=') {
                        *ret_len = len;
                        return per_start_variables[i];
                }
        }
        return NULL;
}

bool per_start_variable(const char *entry) {
        size_t len;
        return per_start_name(entry, &len) != NULL;
}
