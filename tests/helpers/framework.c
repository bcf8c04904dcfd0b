/* SPDX-License-Identifier: MIT */
/* A small "framework" library that a program links: an initialisation a daemon may run ahead of
 * time (--warm-up libhs-framework.so:framework_init), one that starts a thread (always, or once a
 * file exists), which the daemon must refuse to run in its zygote, and a slow one, for a zygote
 * that is still starting. Its thread-local counter is reached by its own code through __tls_get_addr: touched before anything
 * needs it in static TLS, its block stays dynamic for good, and a program reaching it by
 * initial-exec code no longer loads (as Debian's qt6ct beside libLLVM, for libstdc++'s). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "idle-thread.h"

static int initialised;

__thread int framework_tls;

int framework_tls_touch(void);
int framework_tls_touch(void) {
        return ++framework_tls;
}

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

/* Starts a thread only while the file HS_FRAMEWORK_THREAD_IF names exists: a step whose trial
 * passed at one start and that starts a thread at the next. */
void *framework_thread_if_asked(void);
void *framework_thread_if_asked(void) {
        const char *path = getenv("HS_FRAMEWORK_THREAD_IF");
        if (path && access(path, F_OK) == 0)
                start_idle_thread();
        return NULL;
}

/* Takes as long as the file HS_FRAMEWORK_SLOW_WHILE names exists (ten minutes at most), and says
 * which process waits in HS_FRAMEWORK_SLOW_PID. */
void *framework_slow_init(void);
void *framework_slow_init(void) {
        const char *path = getenv("HS_FRAMEWORK_SLOW_WHILE"), *pid_file = getenv("HS_FRAMEWORK_SLOW_PID");
        if (!path || access(path, F_OK) != 0)
                return NULL;
        FILE *f = pid_file ? fopen(pid_file, "w") : NULL;
        if (f) {
                fprintf(f, "%d\n", (int) getpid());
                fclose(f);
        }
        for (int i = 0; i < 6000 && access(path, F_OK) == 0; i++)
                usleep(100 * 1000);
        return NULL;
}

int framework_initialised(void);
int framework_initialised(void) {
        return initialised;
}
