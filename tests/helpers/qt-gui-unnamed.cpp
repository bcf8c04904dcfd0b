// SPDX-License-Identifier: MIT
// A Qt GUI program that sets no desktop file name: on Wayland Qt would name its windows (their app_id)
// after /proc/self/exe, the daemon in a served program, so the daemon execs it there. It prints the
// platform Qt chose.
#include <QGuiApplication>
#include <cstdio>

int main(int argc, char **argv) {
        QGuiApplication app(argc, argv);
        std::printf("%s\n", qPrintable(QGuiApplication::platformName()));
        return 0;
}
