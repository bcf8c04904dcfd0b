/* SPDX-License-Identifier: MIT */
/* A Qt 5 widgets form: a window with a label, a line edit, a button, a list and a table, laid out and
 * shown, then closed after the first round of events. Qt draws off screen unless the user chose a
 * platform (QT_QPA_PLATFORM), so it runs the same on a device without a display. On Wayland the
 * first round of events comes before anything is drawn (the compositor's first configure must come
 * first), so it runs until its first frame is painted and handed to the compositor. */
#include <QApplication>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QWidget>
#include <cstdio>

#include "mark.h"

/* Notes the window's first paint event; the backing store hands the frame over right after. */
class FirstPaint : public QObject {
public:
        bool painted = false;

protected:
        bool eventFilter(QObject *watched, QEvent *event) override {
                if (event->type() == QEvent::Paint)
                        painted = true;
                return QObject::eventFilter(watched, event);
        }
};

int main(int argc, char *argv[]) {
        headstart_mark_main();
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
                qputenv("QT_QPA_PLATFORM", "offscreen");
        QApplication app(argc, argv);
        QWidget window;
        window.setWindowTitle("headstart");
        auto *layout = new QVBoxLayout(&window);
        layout->addWidget(new QLabel("Hello from headstart"));
        layout->addWidget(new QLineEdit("type here"));
        layout->addWidget(new QPushButton("OK"));
        auto *list = new QListWidget;
        for (int i = 0; i < 20; i++)
                list->addItem(QString("item %1").arg(i));
        layout->addWidget(list);
        auto *table = new QTableWidget(10, 4);
        for (int r = 0; r < 10; r++)
                for (int c = 0; c < 4; c++)
                        table->setItem(r, c, new QTableWidgetItem(QString::number(r * c)));
        layout->addWidget(table);
        FirstPaint first_paint;
        window.installEventFilter(&first_paint);
        window.show();
        app.processEvents();
        if (QGuiApplication::platformName() == "wayland") {
                /* Painted once the compositor configured the window; the next round of events
                 * flushes the commit of that frame (Qt flushes its Wayland requests as the event
                 * loop wakes and before it waits). */
                QElapsedTimer waited;
                waited.start();
                while (!first_paint.painted) {
                        if (waited.elapsed() > 10000)
                                break;
                        app.processEvents(QEventLoop::WaitForMoreEvents);
                }
                app.processEvents();
        }
        std::printf("qt-widgets: Qt %s, %d widgets, %d argument(s)\n", qVersion(),
                    static_cast<int>(window.findChildren<QWidget *>().size()), argc - 1);
        std::fflush(stdout); /* the benchmark's ready line: not left in a buffer until exit */
        return 0;
}
