/* SPDX-License-Identifier: MIT */
/* headstartd's configuration file, `key = value` lines. */
#include <limits.h>

#include "fuzz-input.h"
#include "log.h"
#include "options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static int quiet;
        if (!quiet++)
                log_setup("fuzz-config", LOG_LEVEL_ERROR - 1); /* what it says of bad lines is not the point */
        int fd = fuzz_input_fd(data, size);
        if (fd < 0)
                return 0;
        FILE *f = fdopen(fd, "r");
        if (!f) {
                close(fd);
                return 0;
        }
        struct daemon_options o = { 0 };
        (void) options_parse_config_stream(&o, f, "fuzz-input");
        options_done(&o);
        fclose(f);
        return 0;
}
