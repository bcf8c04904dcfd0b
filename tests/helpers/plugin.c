/* SPDX-License-Identifier: MIT */
/* A plugin that programs dlopen after main; with -DSTART_THREAD its constructor starts a thread, with
 * -DTOUCH_FRAMEWORK_TLS it touches the framework's thread-local counter, with -DHANG its constructor
 * never returns, with -DNEEDS_PROGRAM it calls a function of the program that loads it, with
 * -DIGNORES_SIGPIPE its constructor ignores SIGPIPE (and plugin_hello says whether it is ignored). */
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
#ifdef IGNORES_SIGPIPE
#include <signal.h>

__attribute__((constructor)) static void ignore_sigpipe(void) {
        signal(SIGPIPE, SIG_IGN);
}

const char *plugin_hello(void) {
        struct sigaction sa;
        sigaction(SIGPIPE, NULL, &sa);
        return sa.sa_handler == SIG_IGN ? "sigpipe ignored" : "sigpipe default";
}
#elif defined NEEDS_PROGRAM
/* As PHP's extensions: a function only the program that loads it defines (and exports), whose address
 * is in a table of the plugin's, so that it is bound as the plugin loads, not at a first call. */
int program_api(void);
extern int (*plugin_handlers[1])(void);
int (*plugin_handlers[1])(void) = { program_api };
const char *plugin_hello(void) {
        return plugin_handlers[0]() == 42 ? "hello from the plugin, through the program" : "the program answered wrong";
}
#else
const char *plugin_hello(void) {
        return "hello from the plugin";
}
#endif
