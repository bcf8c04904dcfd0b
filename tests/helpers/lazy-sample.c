/* SPDX-License-Identifier: MIT */
/* A program with a large library it uses only after it is ready (libjpeg, on a "save" path), one it
 * uses before (zlib), and one it imports data from (libm's signgam), for `headstart lazy plan`. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include <jpeglib.h> /* after stdio.h: it uses FILE and size_t */

int main(int argc, char **argv) {
        printf("ready, zlib %s\n", zlibVersion());
        fflush(stdout);
        if (argc > 1 && strcmp(argv[1], "save") == 0) {
                struct jpeg_error_mgr errors;
                jpeg_std_error(&errors);
                printf("saved with libjpeg %d\n", JPEG_LIB_VERSION);
        }
        if (argc > 1 && strcmp(argv[1], "gamma") == 0)
                printf("lgamma(-0.5) has sign %d (%g)\n", (lgamma(-0.5), signgam), lgamma(-0.5));
        return 0;
}
