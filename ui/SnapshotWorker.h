// SPDX-License-Identifier: GPL-3.0-or-later
// Takes a ConsoleSnapshot about four times a second on a thread of its own,
// so walking 100,000 tracked clients never stalls the window, and hands it
// to the GUI thread with a queued signal. Never on the request path: it
// only reads the engine's bounded snapshots, the event ring, the request
// samples and (for the audit trail) the store's read connection.
#pragma once

#include <QObject>
#include <QTimer>

// moc cannot parse the C++20 standard headers these pull in; it only needs the class.
#ifndef Q_MOC_RUN
#include "ui/ConsoleServices.h"
#include "ui/ConsoleSnapshot.h"
#include "core/Hash.h"
#include <array>
#include <mutex>
#include <unordered_map>
#endif

namespace Floodgate::Ui {

class SnapshotWorker : public QObject {
    Q_OBJECT

public:
    explicit SnapshotWorker(ConsoleServices services, QObject* parent = nullptr);

    // The client the buckets view follows (any thread); empty: none.
    void follow(const std::string& address);
    // Takes one snapshot now, on the calling thread (tests, the first paint).
    SnapshotPtr take();

    static constexpr int IntervalMs = 250;
    static constexpr std::size_t MaxClients = 500;

public Q_SLOTS:
    void start();  // on the worker's thread: begins the timer
    void stop();
    void takeNow();  // one snapshot at once, through the ready signal (in order with the timer's)

Q_SIGNALS:
    void ready(Floodgate::Ui::SnapshotPtr snapshot);

private:
    void tick();

    void diffLists(ConsoleSnapshot& s);

    struct ListState {
        bool started = false;
        std::shared_ptr<const Core::AddressList> list;
        std::shared_ptr<const Core::AddressList> automatic;
        std::unordered_map<Core::Cidr, Core::ListEntry, Core::CidrHash> shown;  // what the console was last told
    };
    std::array<ListState, 2> m_lists;

    struct Seen {
        QString request;
        QString userAgent;
        Core::Millis at = 0;
    };

    ConsoleServices m_services;
    QTimer* m_timer = nullptr;
    std::mutex m_mutex;  // guards everything below: take() may run on another thread than tick()
    std::string m_followed;
    Core::Millis m_lastSecond = 0;  // start of the newest complete second delivered
    std::uint64_t m_lastEvent = 0;
    std::int64_t m_lastAudit = -1;
    std::unordered_map<std::string, Seen> m_seen;  // counting key text -> last request seen
    // The stored configuration, read again (here, not on the GUI thread)
    // whenever the engine publishes a new one.
    std::shared_ptr<const Core::EngineConfig> m_configSeen;
    std::shared_ptr<const Core::EngineConfig> m_stored;
};

} // namespace Floodgate::Ui
