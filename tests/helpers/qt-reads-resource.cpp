// SPDX-License-Identifier: MIT
// A Qt program with a resource of its own, at a path a library of another program also uses: it
// prints what Qt reads there and what Qt lists in that resource folder.
#include <QDir>
#include <QFile>
#include <cstdio>

int main() {
        QFile said(QStringLiteral(":/headstart/said.txt"));
        if (!said.open(QIODevice::ReadOnly))
                return 1;
        std::printf("%s", said.readAll().constData());
        std::printf("%s\n", qPrintable(QDir(QStringLiteral(":/headstart")).entryList().join(QLatin1Char(' '))));
        return 0;
}
