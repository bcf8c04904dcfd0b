/* SPDX-License-Identifier: MIT */
/* A thread that does nothing, for test programs and libraries whose loading or initialisation must
 * start one (the daemon has to notice and refuse them). */
#pragma once

#include <pthread.h>
#include <unistd.h>

static void *idle_thread_main(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

static inline void start_idle_thread(void) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle_thread_main, NULL) == 0)
                pthread_detach(t);
}
