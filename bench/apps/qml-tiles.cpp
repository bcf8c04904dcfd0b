/* SPDX-License-Identifier: MIT */
/* A Qt 6 Quick home screen: a QML window with a grid of 16 labelled tiles (qml-tiles.qml), compiled
 * into the program as a Qt resource the way an application ships its QML. It prints its line once
 * the scene graph has drawn the window's first frame, then quits. Qt draws off screen unless the
 * user chose a platform (QT_QPA_PLATFORM), as qt-widgets does, so it runs without a display too. */
#include <QGuiApplication>
#include <QQmlApplicationEngine>
#include <QQuickWindow>
#include <QUrl>
#include <cstdio>

#include "mark.h"

int main(int argc, char *argv[]) {
        headstart_mark_main();
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
                qputenv("QT_QPA_PLATFORM", "offscreen");
        QGuiApplication app(argc, argv);
        QQmlApplicationEngine engine;
        engine.load(QUrl(QStringLiteral("qrc:/headstart/qml-tiles.qml")));
        auto *window = engine.rootObjects().isEmpty() ? nullptr : qobject_cast<QQuickWindow *>(engine.rootObjects()[0]);
        if (!window) {
                std::fprintf(stderr, "qml-tiles: the QML did not make a window\n");
                return 1;
        }
        QObject *tiles = window->findChild<QObject *>(QStringLiteral("tiles"));
        QObject::connect(window, &QQuickWindow::frameSwapped, &app, [&] {
                std::printf("qml-tiles: Qt %s, %d tiles, %d argument(s)\n", qVersion(),
                            tiles ? tiles->property("count").toInt() : 0, argc - 1);
                std::fflush(stdout); /* the benchmark's ready line: not left in a buffer until exit */
                QCoreApplication::quit();
        }, Qt::SingleShotConnection);
        return QGuiApplication::exec();
}
