/* SPDX-License-Identifier: MIT */
/* A plugin that programs dlopen after main; with -DSTART_THREAD its constructor starts a thread, with
 * -DTOUCH_FRAMEWORK_TLS it touches the framework's thread-local counter, with -DHANG its constructor
 * never returns. */
#include <stddef.h>
#include <unistd.h>

#ifdef HANG
__attribute__((constructor)) static void hang(void) {
        for (;;)
                pause();
}
#endif

#ifdef START_THREAD
#include "idle-thread.h"

__attribute__((constructor)) static void start_thread(void) {
        start_idle_thread();
}
#endif

#ifdef TOUCH_FRAMEWORK_TLS
int framework_tls_touch(void);

__attribute__((constructor)) static void touch_framework_tls(void) {
        (void) framework_tls_touch();
}
#endif

const char *plugin_hello(void);
const char *plugin_hello(void) {
        return "hello from the plugin";
}
