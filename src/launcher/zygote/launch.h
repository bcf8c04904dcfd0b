/* SPDX-License-Identifier: MIT */
/* One LAUNCH request, whole: checked, then declined or started (from the pool, else by a fork).
 * Decides and says so in a verdict; replying to the client is the connection's (conn.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "protocol.h"

struct conn;
struct server;

enum launch_outcome {
        LAUNCH_STARTED,   /* the program runs in verdict.child, in s->children */
        LAUNCH_DECLINED,  /* the client execs it: verdict.code and .text say why */
        LAUNCH_MALFORMED, /* not a valid request: ERROR verdict.error, .text */
        LAUNCH_WAITING,   /* it waits for its prepared child (prepared_wait_for_child): tried again later */
};

struct launch_verdict {
        enum launch_outcome outcome;
        enum hs_decline_reason code;
        int error;
        char text[HS_MAX_TEXT];
        struct child *child;
        bool refresh_wanted; /* started, and --refresh-launches is reached */
};

void launch_handle(struct server *s, struct conn *c, struct launch_verdict *ret);
