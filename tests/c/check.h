/* SPDX-License-Identifier: MIT */
/* The C unit tests' one assertion: counts, and names what failed without stopping. */
#pragma once

#include <stdio.h>

static int passed, failed;

#define CHECK(cond)                                                                            \
        do {                                                                                   \
                if (cond)                                                                      \
                        passed++;                                                              \
                else {                                                                         \
                        failed++;                                                              \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
                }                                                                              \
        } while (0)
