// SPDX-License-Identifier: MIT
// A library that gives Qt a startup routine from its constructor (Q_COREAPP_STARTUP_FUNCTION, as
// KDE's KI18n and KCrash do): every QCoreApplication in a process that loaded it runs the routine.
#include <QCoreApplication>
#include <cstdio>

static void say_it_ran() {
        std::printf("the startup routine of libqt-startup-routine ran\n");
}
Q_COREAPP_STARTUP_FUNCTION(say_it_ran)

extern "C" int qt_startup_routine_linked(void) {
        return 1;
}
