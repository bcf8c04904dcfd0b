/* SPDX-License-Identifier: MIT */
/* Built -fPIE without -rdynamic, like a distribution's program: it reaches the variables of libc
 * (optind, optarg, stdout, environ) and of libcopyvars through copy relocations, and defines a
 * function that libcopyvars calls. Prints what it sees; under exec and through the daemon the
 * output must be the same. With -DSELF_REFERENCE it also copies an object that points into
 * itself, which the daemon must send to exec. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copyvars.h"

extern char **environ;

const char *copyvars_hook(void) {
        return "the program's hook";
}

int main(int argc, char *argv[]) {
        int c;
        while ((c = getopt(argc, argv, "ab:")) != -1) {
                if (c == '?')
                        return 2;
                printf("option %c%s%s\n", c, optarg ? " " : "", optarg ? optarg : "");
        }
        printf("optind=%d, first operand: %s\n", optind, optind < argc ? argv[optind] : "(none)");
        printf("counter=%d\n", copyvars_counter);
        int bumped = copyvars_bump();
        printf("bumped by the library: %d, seen by the program: %d\n", bumped, copyvars_counter);
        printf("greeting=%s\n", copyvars_greeting);
        printf("hook: %s\n", copyvars_call_hook());
        printf("HOME from the program's environ: %s\n", getenv("HOME") ? "set" : "unset");
        for (char **e = environ; *e; e++)
                if (strncmp(*e, "COPYVARS=", 9) == 0)
                        printf("environ has %s\n", *e);
#ifdef SELF_REFERENCE
        printf("self-reference intact: %d\n", copyvars_self.self == &copyvars_self);
#endif
        fflush(stdout);
        fprintf(stderr, "to stderr through the program's copy\n");
        return 3;
}
