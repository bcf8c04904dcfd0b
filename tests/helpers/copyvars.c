/* SPDX-License-Identifier: MIT */
/* A library whose variables a -fPIE program reaches through copy relocations, and which calls a
 * function the program may define itself: under exec, the library then uses the program's copy
 * and the program's function. */
#include "copyvars.h"

int copyvars_counter = 7;
const char *copyvars_greeting = "hello from the library";
struct copyvars_self copyvars_self = { &copyvars_self, 1 };

__attribute__((weak)) const char *copyvars_hook(void) {
        return "the library's hook";
}

int copyvars_bump(void) {
        return ++copyvars_counter;
}

const char *copyvars_call_hook(void) {
        return copyvars_hook();
}
