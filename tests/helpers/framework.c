/* SPDX-License-Identifier: MIT */
/* A small "framework" library that a program links: an initialisation a daemon may run ahead of
 * time (--warm-up libhs-framework.so:framework_init), and one that starts a thread, which the daemon
 * must refuse to run in its zygote. */
#include <stddef.h>

#include "idle-thread.h"

static int initialised;

void *framework_init(void);
void *framework_init(void) {
        initialised = 1;
        return NULL;
}

void *framework_start_thread(void);
void *framework_start_thread(void) {
        start_idle_thread();
        return NULL;
}

int framework_initialised(void);
int framework_initialised(void) {
        return initialised;
}
