/* SPDX-License-Identifier: MIT */
/* Links libredefines ahead of the C library and prints which definitions it and the library reach:
 * under exec and served, the library's (tests/test_interposers.py). Built -fPIE without -rdynamic,
 * like a distribution's program: it reaches the variable by a copy relocation. */
#include <stdio.h>
#include <string.h>

extern void (*obstack_alloc_failed_handler)(void);
void redefines_handler(void);
int _obstack_memory_used(void *h);
int backtrace(void **buffer, int size);
int redefines_own_call(void);
int redefines_sees_its_handler(void);

int main(void) {
        long empty_obstack[16];
        void *frames[4];
        memset(empty_obstack, 0, sizeof empty_obstack);
        printf("_obstack_memory_used: %d\n", _obstack_memory_used(empty_obstack));
        printf("backtrace: %d\n", backtrace(frames, 4));
        printf("the library's own call: %d\n", redefines_own_call());
        printf("the program sees the library's handler: %d\n", obstack_alloc_failed_handler == redefines_handler);
        printf("the library sees its handler: %d\n", redefines_sees_its_handler());
        return 0;
}
