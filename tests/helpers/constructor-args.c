/* SPDX-License-Identifier: MIT */
/* A program whose constructor reads what glibc passes it (argc, argv, envp), as Rust's standard
 * library reads a program's arguments, and sets a variable the program copies from the C library
 * (opterr): main prints both. Under exec the constructor sees the program's own arguments, and its
 * change of the copy holds. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int seen_argc = -1;
static char **seen_argv, **seen_envp;

__attribute__((constructor)) static void remember(int argc, char **argv, char **envp) {
        seen_argc = argc;
        seen_argv = argv;
        seen_envp = envp;
        opterr = 5;
}

int main(int argc, char **argv) {
        printf("constructor: argc=%d", seen_argc);
        for (int i = 0; seen_argv && i < seen_argc; i++)
                printf(" [%s]", seen_argv[i]);
        printf("\nconstructor's environment is main's: %d, its argv is main's: %d\n", seen_envp == __environ,
               seen_argv == argv);
        printf("main: argc=%d opterr=%d\n", argc, opterr);
        return 0;
}
