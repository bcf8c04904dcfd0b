// SPDX-License-Identifier: MIT
// A Qt program that loads, after main, the library named by its argument (libqt-startup-routine,
// which gives Qt a startup routine): the daemon learns it, and preloads it as this program's own.
#include <QCoreApplication>
#include <cstdio>
#include <dlfcn.h>

int main(int argc, char **argv) {
        QCoreApplication app(argc, argv);
        std::fflush(stdout);
        std::printf("loaded: %d\n", argc > 1 && dlopen(argv[1], RTLD_NOW) != nullptr);
        return 0;
}
