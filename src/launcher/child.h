/* SPDX-License-Identifier: MIT */
/* Turning a forked child of the daemon into the requested program. */
#pragma once

#include "protocol.h"

/* Positions in the fds received with a LAUNCH request. */
enum {
        HS_FD_PROGRAM = 0,
        HS_FD_CWD = 1,
        HS_FD_FIRST_PASSED = 2,
};

struct child_spec {
        const struct hs_launch_request *req;
        int *fds;          /* as received: program, working directory, passed fds */
        const char *image; /* the file to dlopen */
        int report_fd;     /* write end of the pipe that tells the daemon about failures before main */
};

/* Never returns: the program's exit status, or 127 after reporting why it could not start. */
_Noreturn void child_run(const struct child_spec *spec);
