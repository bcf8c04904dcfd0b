// SPDX-License-Identifier: MIT
// Prints the folder Qt says it runs from (Qt reads it from /proc/self/exe): a served program would be
// told the daemon's, and miss what it keeps beside its own (focuswriter: ../share/focuswriter), so the
// daemon must send this one to exec.
#include <QCoreApplication>
#include <cstdio>

int main(int argc, char **argv) {
        QCoreApplication app(argc, argv);
        std::printf("%s\n", qPrintable(QCoreApplication::applicationDirPath()));
        return 0;
}
