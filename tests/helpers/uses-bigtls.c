/* SPDX-License-Identifier: MIT */
#include <stdio.h>

int bigtls_touch(int i);

int main(void) {
        printf("bigtls says %d\n", bigtls_touch(7));
        return 3;
}
