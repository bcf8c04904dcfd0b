// SPDX-License-Identifier: MIT
// A Qt program that links libqt-startup-routine: its own QCoreApplication runs the routine.
#include <QCoreApplication>
#include <cstdio>

extern "C" int qt_startup_routine_linked(void);

int main(int argc, char **argv) {
        QCoreApplication app(argc, argv);
        std::printf("linked: %d\n", qt_startup_routine_linked());
        return 0;
}
