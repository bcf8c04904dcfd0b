/* SPDX-License-Identifier: MIT */
/* A small "framework" library that a program links: an initialisation a daemon may run ahead of
 * time (--warm-up libhs-framework.so:framework_init), and one that starts a thread, which the daemon
 * must refuse to run in its zygote. */
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

static int initialised;

void *framework_init(void);
void *framework_init(void) {
        initialised = 1;
        return NULL;
}

static void *idle(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

void *framework_start_thread(void);
void *framework_start_thread(void) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle, NULL) == 0)
                pthread_detach(t);
        return NULL;
}

int framework_initialised(void);
int framework_initialised(void) {
        return initialised;
}
