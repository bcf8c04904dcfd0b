/* SPDX-License-Identifier: MIT */
/* headstart-pind's plan file (format 2, docs/pinning.md). */
#include "fuzz-input.h"
#include "log.h"
#include "plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static int quiet;
        if (!quiet++)
                log_setup("fuzz-pin-plan", LOG_LEVEL_ERROR - 1);
        int fd = fuzz_input_fd(data, size);
        if (fd < 0)
                return 0;
        char path[64];
        fuzz_input_path(fd, path, sizeof path);
        struct pin_plan plan;
        if (pin_plan_read(path, &plan) == 0)
                pin_plan_done(&plan);
        close(fd);
        return 0;
}
