/* SPDX-License-Identifier: MIT */
/* A program with a large library it uses only after it is ready (libjpeg, on a "save" path), one it
 * uses before (zlib), and one it imports data from (libm's signgam), for `headstart lazy plan`; on
 * a "late" path it uses libjpeg after ready without ending at SIGTERM. */
#include <math.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include <jpeglib.h> /* after stdio.h: it uses FILE and size_t */

static void continued(int sig) {
        (void) sig;
}

/* "late": like a program that handles SIGTERM (GLib's g_unix_signal_add), it goes on after it, and
 * uses libjpeg once continued (or after a second): that is after ready, stopped there or not. */
static void use_late(void) {
        sigset_t term;
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        sigprocmask(SIG_BLOCK, &term, NULL);
        signal(SIGCONT, continued);
}

int main(int argc, char **argv) {
        bool late = argc > 1 && strcmp(argv[1], "late") == 0;
        if (late)
                use_late();
        printf("ready, zlib %s\n", zlibVersion());
        fflush(stdout);
        if (late)
                nanosleep(&(struct timespec){ .tv_sec = 1 }, NULL); /* a SIGCONT ends it */
        if (argc > 1 && (strcmp(argv[1], "save") == 0 || late)) {
                struct jpeg_error_mgr errors;
                jpeg_std_error(&errors);
                printf("saved with libjpeg %d\n", JPEG_LIB_VERSION);
        }
        if (argc > 1 && strcmp(argv[1], "gamma") == 0)
                printf("lgamma(-0.5) has sign %d (%g)\n", (lgamma(-0.5), signgam), lgamma(-0.5));
        return 0;
}
