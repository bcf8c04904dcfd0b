/* SPDX-License-Identifier: MIT */
/* A program with a constructor that leaves a trace: a line in $HEADSTART_TEST_CTOR_LOG per run of
 * the constructor, and with -DSTART_THREAD a thread started while loading. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef START_THREAD
#include "idle-thread.h"
#endif

__attribute__((constructor)) static void leave_trace(void) {
        const char *log = getenv("HEADSTART_TEST_CTOR_LOG");
        if (log) {
                int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
                if (fd >= 0) {
                        (void) !write(fd, "constructor\n", 12);
                        close(fd);
                }
        }
#ifdef START_THREAD
        start_idle_thread();
#endif
}

int main(int argc, char *argv[]) {
        printf("main of %s with %d argument(s)\n", strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0],
               argc - 1);
        return 0;
}
