/* SPDX-License-Identifier: MIT */
/* A library that defines functions and a variable of the C library again, as gnulib's obstack and
 * argp in gettext's and man-db's libraries and libunwind's backtrace do: under exec, the program
 * that links it and the library itself bind these names here, ahead of the C library. Each returns
 * what the C library's never would. */
#include <stddef.h>

void redefines_handler(void);
void redefines_handler(void) {
}

/* glibc's is the default handler, print_and_abort. */
void (*obstack_alloc_failed_handler)(void) = redefines_handler;

/* glibc's counts the obstack's chunks (0 for an empty one). */
int _obstack_memory_used(void *h);
int _obstack_memory_used(void *h) {
        (void) h;
        return 4242;
}

/* glibc's returns how many frames it stored (at least 1). */
int backtrace(void **buffer, int size);
int backtrace(void **buffer, int size) {
        (void) buffer;
        (void) size;
        return -7;
}

/* The library's own references, through its PLT and GOT as any exported name's. */
int redefines_own_call(void);
int redefines_own_call(void) {
        return backtrace(NULL, 0);
}

int redefines_sees_its_handler(void);
int redefines_sees_its_handler(void) {
        return obstack_alloc_failed_handler == redefines_handler;
}
