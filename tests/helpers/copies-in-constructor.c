/* SPDX-License-Identifier: MIT */
/* Built like a distribution's program (-fPIE, no -rdynamic): its constructor reads variables that
 * its copy relocations fill (libcopyvars' counter and greeting, libc's optind), as pdftotext's
 * static initialisers read poppler's TextOutputDev::minColSpacing1_default. Under exec the loader
 * fills the copies before any constructor runs; main then asks the dynamic loader where the
 * counter is, which under exec is the program's copy (the executable comes first). */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

#include "copyvars.h"

static int seen_counter, seen_optind;
static const char *seen_greeting;

__attribute__((constructor)) static void remember(void) {
        seen_counter = copyvars_counter;
        seen_greeting = copyvars_greeting;
        seen_optind = optind;
}

int main(void) {
        printf("constructor saw counter=%d greeting=%s optind=%d\n", seen_counter,
               seen_greeting ? seen_greeting : "(null)", seen_optind);
        printf("main sees counter=%d greeting=%s optind=%d\n", copyvars_counter, copyvars_greeting, optind);
        printf("the loader finds the program's copy: %d\n", dlsym(RTLD_DEFAULT, "copyvars_counter") == &copyvars_counter);
        return 0;
}
