// SPDX-License-Identifier: GPL-3.0-or-later
// The console on a real stack for the GUI suites: the serving stack of
// TrafficStack.h on a SQLite file in a temporary folder, the console's
// services over it, and the window, offscreen.
#pragma once

#include "ui/Console.h"
#include "ui/MainWindow.h"
#include "TrafficStack.h"

#include <QPushButton>
#include <QTemporaryDir>

#include <memory>

namespace FloodgateTest {

// The push button under `parent` that says `text` (the last one, if there
// are several), or null.
inline QPushButton* buttonWithText(const QWidget* parent, const QString& text)
{
    QPushButton* found = nullptr;
    for (QPushButton* b : parent->findChildren<QPushButton*>())
        if (b->text() == text)
            found = b;
    return found;
}

// Made before the stack (a base listed first): the folder its file lives in.
struct ScratchFolder {
    QTemporaryDir dir;
    QString dbPath = dir.filePath(QStringLiteral("floodgate.db"));
};

struct ConsoleStack : ScratchFolder, TrafficStack {
    explicit ConsoleStack(bool window = true, const std::string& logPath = {})
        : TrafficStack(dbPath.toStdString(), Floodgate::Storage::StoreOptions{}.busyTimeoutMs, logPath)
    {
        using namespace Floodgate;
        Ui::ConsoleServices s;
        s.engine = engine.get();
        s.store = store.get();
        s.log = &log;
        s.samples = &samples;
        s.clock = &clock;
        s.listenUrl = [this] { return "http://127.0.0.1:" + std::to_string(listener->port()); };
        s.modeText = "decision mode";
        s.databasePath = dbPath.toStdString();
        console = std::make_unique<Ui::Console>(s);
        if (window) {
            mainWindow = std::make_unique<Ui::MainWindow>(*console);
            mainWindow->resize(1366, 768);
            mainWindow->show();
        }
        console->refreshNow();
    }
    ~ConsoleStack()
    {
        // The window and the console first: they read the stack.
        mainWindow.reset();
        console.reset();
    }

    std::unique_ptr<Floodgate::Ui::Console> console;
    std::unique_ptr<Floodgate::Ui::MainWindow> mainWindow;
};

} // namespace FloodgateTest
