// SPDX-License-Identifier: MIT
// Prints the file and folder Qt says it runs from. Qt reads them from /proc/self/exe, the daemon in a
// served program, unless told (qt-file-path.h): served, focuswriter looked for its themes and
// translations beside headstartd.
#include <QCoreApplication>
#include <cstdio>

int main(int argc, char **argv) {
        QCoreApplication app(argc, argv);
        std::printf("%s\n%s\n", qPrintable(QCoreApplication::applicationFilePath()),
                    qPrintable(QCoreApplication::applicationDirPath()));
        return 0;
}
