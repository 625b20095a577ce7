// SPDX-License-Identifier: GPL-3.0-or-later
// A serving stack in process for the suites above the listener (admin API,
// console): a SQLite file opened by the store (polling other processes'
// changes every 50 ms) and its writer, the engine on the stored rules, the
// limiter log (in memory unless given a file), and the traffic listener on 127.0.0.1 port 0
// with its request samples. Header-only: the suites that include it link
// storage and the listener.
#pragma once

#include "core/Engine.h"
#include "HttpTestClient.h"
#include "http/LimiterLog.h"
#include "http/Listener.h"
#include "http/Metrics.h"
#include "http/RequestSamples.h"
#include "storage/Store.h"

#include <memory>
#include <stdexcept>
#include <string>

namespace FloodgateTest {

struct TrafficStack {
    // busyTimeoutMs: how long a write waits for another connection's lock.
    // logPath: limiter.log's file (empty: in memory only).
    explicit TrafficStack(const std::string& dbPath, int busyTimeoutMs = Floodgate::Storage::StoreOptions{}.busyTimeoutMs,
                          const std::string& logPath = {})
        : log(logPath, 1)
    {
        using namespace Floodgate;
        Storage::StoreOptions so;
        so.path = dbPath;
        so.pollIntervalMs = 50;
        so.busyTimeoutMs = busyTimeoutMs;
        Storage::OpenFailure failure;
        store = Storage::Store::open(so, clock, &failure);
        if (!store)
            throw std::runtime_error("store: " + failure.message);
        engine = std::make_unique<Core::Engine>(store->load().config);
        store->start(engine.get());
        log.start(nullptr);
        Http::ListenerOptions lo;
        lo.port = 0;
        lo.threads = 1;
        listener = std::make_unique<Http::Listener>(*engine, lo, &log, &metrics);
        listener->setRequestSamples(&samples);
        std::string why;
        if (!listener->start(&why))
            throw std::runtime_error("listener: " + why);
    }
    ~TrafficStack()
    {
        listener->stop();
        store->stop();
        log.stop();
    }
    TrafficStack(const TrafficStack&) = delete;
    TrafficStack& operator=(const TrafficStack&) = delete;

    // One request to the traffic listener from a loopback address of its own.
    Response requestFull(const char* from, const std::string& target = "/", const std::string& headers = {})
    {
        return fetch(listener->port(), get(target, headers), 3000, from).value_or(Response{});
    }
    int request(const char* from, const std::string& target = "/", const std::string& headers = {})
    {
        return requestFull(from, target, headers).status;
    }

    Floodgate::Core::SystemClock clock;
    std::unique_ptr<Floodgate::Storage::Store> store;
    std::unique_ptr<Floodgate::Core::Engine> engine;
    Floodgate::Http::LimiterLog log;
    Floodgate::Http::ListenerMetrics metrics{1};
    Floodgate::Http::RequestSamples samples{1};
    std::unique_ptr<Floodgate::Http::Listener> listener;
};

} // namespace FloodgateTest
