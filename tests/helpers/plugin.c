/* SPDX-License-Identifier: MIT */
/* A plugin that programs dlopen after main; with -DSTART_THREAD its constructor starts a thread. */
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

#ifdef START_THREAD
static void *idle(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

__attribute__((constructor)) static void start_thread(void) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle, NULL) == 0)
                pthread_detach(t);
}
#endif

const char *plugin_hello(void);
const char *plugin_hello(void) {
        return "hello from the plugin";
}
