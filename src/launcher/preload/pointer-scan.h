/* SPDX-License-Identifier: MIT */
/* Finding the words of this process's writable memory that point into given objects.
 *
 * A library variable that a program copies (a copy relocation) and that something points into, as
 * std::cin's tie points at std::cout, must be moved as if it had been built in the program's copy:
 * under exec, the library's constructors ran with the copy in place. The daemon's zygote ran them
 * with the library's own definition, so every pointer they left into it is found here once, when a
 * program's binding is planned, and redirected in each launched child (bind-plan.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct scan_range {
        uintptr_t lo, hi; /* [lo, hi) */
};

/* Calls fn(address of the word, index of the range its value points into) for every aligned word
 * of this process's private writable mappings whose value lies in one of ranges, except the words
 * inside the ranges themselves (an object's own pointers are moved with its bytes). Mappings are
 * read through /proc/self/mem, so a page that cannot be read is skipped rather than faulting;
 * mappings larger than SCAN_MAX_MAPPING (AddressSanitizer's shadow, reserved and never touched)
 * and the stack (the zygote's frames, which no launched program returns to) are not read. Stops
 * at, and returns, fn's first non-zero result; a negative errno when the memory cannot be read. */
#define SCAN_MAX_MAPPING ((uint64_t) 1 << 30)
typedef int (*pointer_scan_fn)(uintptr_t address, size_t range, void *userdata);
int pointer_scan(const struct scan_range *ranges, size_t n, pointer_scan_fn fn, void *userdata);
