/* SPDX-License-Identifier: MIT */
/* One `schedule = PROGRAM KEY=VALUE...` setting, parsed (not applied). */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "schedule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static int quiet;
        if (!quiet++)
                log_setup("fuzz-schedule", LOG_LEVEL_ERROR - 1);
        char *spec = strndup((const char *) data, size);
        if (!spec)
                return 0;
        struct schedule s;
        if (schedule_parse(spec, &s) == 0) {
                char what[256];
                schedule_describe(&s, what, sizeof what);
                schedule_done(&s);
        }
        free(spec);
        return 0;
}
