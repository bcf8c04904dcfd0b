/* SPDX-License-Identifier: MIT */
/* A plugin that programs dlopen after main; with -DSTART_THREAD its constructor starts a thread. */
#include <stddef.h>

#ifdef START_THREAD
#include "idle-thread.h"

__attribute__((constructor)) static void start_thread(void) {
        start_idle_thread();
}
#endif

const char *plugin_hello(void);
const char *plugin_hello(void) {
        return "hello from the plugin";
}
