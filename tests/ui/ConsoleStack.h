// SPDX-License-Identifier: MIT
// The console on a real stack for the GUI suites: a SQLite file in a
// temporary folder, the store's writer, the engine, the traffic listener on
// 127.0.0.1 port 0 with its request samples, and the window, offscreen.
#pragma once

#include "Console.h"
#include "Engine.h"
#include "HttpTestClient.h"
#include "LimiterLog.h"
#include "Listener.h"
#include "MainWindow.h"
#include "Metrics.h"
#include "RequestSamples.h"
#include "Store.h"

#include <QTemporaryDir>

#include <memory>
#include <stdexcept>

namespace FloodgateTest {

struct ConsoleStack {
    explicit ConsoleStack(bool window = true)
    {
        using namespace Floodgate;
        dbPath = dir.filePath(QStringLiteral("floodgate.db"));
        Storage::StoreOptions so;
        so.path = dbPath.toStdString();
        so.pollIntervalMs = 50;
        Storage::OpenFailure failure;
        store = Storage::Store::open(so, clock, &failure);
        if (!store)
            throw std::runtime_error(failure.message);
        const Storage::Loaded loaded = store->load();
        engine = std::make_unique<Core::Engine>(loaded.config);
        store->start(engine.get());
        log.start(nullptr);
        Http::ListenerOptions lo;
        lo.port = 0;
        lo.threads = 1;
        listener = std::make_unique<Http::Listener>(*engine, lo, &log, &metrics);
        listener->setRequestSamples(&samples);
        std::string why;
        if (!listener->start(&why))
            throw std::runtime_error(why);
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
        mainWindow.reset();
        console.reset();
        listener->stop();
        store->stop();
        log.stop();
    }

    // One request from a loopback address of its own; the status.
    int request(const char* from, const std::string& target = "/")
    {
        return fetch(listener->port(), get(target), 3000, from).value_or(Response{}).status;
    }
    Response requestFull(const char* from, const std::string& target = "/")
    {
        return fetch(listener->port(), get(target), 3000, from).value_or(Response{});
    }

    QTemporaryDir dir;
    QString dbPath;
    Floodgate::Core::SystemClock clock;
    std::unique_ptr<Floodgate::Storage::Store> store;
    std::unique_ptr<Floodgate::Core::Engine> engine;
    Floodgate::Http::LimiterLog log{std::string(), 1};
    Floodgate::Http::ListenerMetrics metrics{1};
    Floodgate::Http::RequestSamples samples{1};
    std::unique_ptr<Floodgate::Http::Listener> listener;
    std::unique_ptr<Floodgate::Ui::Console> console;
    std::unique_ptr<Floodgate::Ui::MainWindow> mainWindow;
};

} // namespace FloodgateTest
