/* SPDX-License-Identifier: MIT */
/* Prints the name /proc/self/exe links to: a served program would see the daemon there, so the
 * daemon must send this one to exec. */
#include <libgen.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
        char buf[4096];
        ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
        if (n < 0)
                return 1;
        buf[n] = '\0';
        printf("%s\n", basename(buf));
        return 0;
}
