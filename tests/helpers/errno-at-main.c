/* SPDX-License-Identifier: MIT */
/* Prints errno as main finds it: 0 under exec (xrdb, for one, reports errno when it is set, and the
 * corpus run of issue 30 found it set by the daemon in a served program). */
#include <errno.h>
#include <stdio.h>

int main(void) {
        int seen = errno;
        printf("errno at main: %d\n", seen);
        return 0;
}
