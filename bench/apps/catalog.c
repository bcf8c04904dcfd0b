/* SPDX-License-Identifier: MIT */
/* A program on a library of our own (libhs-catalog.so, catalog-lib.c), for `headstart link check`:
 * sums the catalogue's entries. Argument: how many (default all). */
#include <stdio.h>
#include <stdlib.h>

#include "catalog.h"
#include "mark.h"

int main(int argc, char *argv[]) {
        headstart_mark_main();
        unsigned count = argc > 1 ? (unsigned) strtoul(argv[1], NULL, 10) : CATALOG_SIZE;
        const char *last = "none";
        double total = catalog_total(count, &last);
        printf("catalog: %u entries summed, total %.1f, last %s\n", count > CATALOG_SIZE ? CATALOG_SIZE : count,
               total, last);
        return 0;
}
