/* SPDX-License-Identifier: MIT */
#include <stdio.h>

const char *versioned_name(void);

int main(void) {
        puts(versioned_name());
        return 0;
}
