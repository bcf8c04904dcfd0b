/* SPDX-License-Identifier: MIT */
/* Linked with immediate or lazy binding (tests/helpers/meson.build): the probe must see main
 * entered either way. Calls a few libc functions through its PLT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char *argv[]) {
        const char *word = argc > 1 ? argv[1] : "none";
        printf("argument %s, %zu bytes\n", word, strlen(word));
        return atoi(argc > 2 ? argv[2] : "0");
}
