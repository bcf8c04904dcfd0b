/* SPDX-License-Identifier: MIT */
/* A program whose code is in a library of its own that links GTK (gtk-hello.c built with
 * MAIN_IN_LIBRARY): its main only calls the library's, as geany's calls libgeany's. */
int hs_gtk_hello_main(int argc, char *argv[]);

int main(int argc, char *argv[]) {
        return hs_gtk_hello_main(argc, argv);
}
