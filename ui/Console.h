// SPDX-License-Identifier: GPL-3.0-or-later
// The console's controller: runs the snapshot worker on its own thread,
// hands each snapshot to the views, and performs the operator's writes
// through the store, calling back on the GUI thread only after COMMIT (so a
// view says "saved" when it is on disk and applied).
#pragma once

#include <QObject>
#include <QThread>

// moc cannot parse the C++20 standard headers these pull in; it only needs the class.
#ifndef Q_MOC_RUN
#include "ui/ConsoleServices.h"
#include "ui/ConsoleSnapshot.h"
#include "storage/Store.h"
#include <functional>
#endif

namespace Floodgate::Ui {

class SnapshotWorker;

class Console : public QObject {
    Q_OBJECT

public:
    explicit Console(ConsoleServices services, QObject* parent = nullptr);
    ~Console() override;

    const ConsoleServices& services() const { return m_services; }
    // Starts the 4 Hz refresh on the worker thread.
    void startUpdates();
    // One snapshot taken on this thread and delivered at once (tests, start-up).
    void refreshNow();
    SnapshotPtr latest() const { return m_latest; }
    // The client the buckets view follows ("" for none).
    void follow(const QString& address);

    // "console:<user>", the name written into the audit trail.
    QString actor() const;

    using Done = std::function<void(const Storage::Outcome&)>;
    void addEntry(Core::ListKind kind, Core::ListEntry entry, Done done);
    void removeEntry(Core::ListKind kind, Core::Cidr range, Done done);
    void putTier(Core::Tier tier, Done done);
    void deleteTier(QString name, Done done);
    // Keys::Keep: a stored customer keeps its keys (customer.keys are a new one's).
    void putCustomer(Core::Customer customer, Done done, Storage::Store::Keys keys = Storage::Store::Keys::Keep);
    void addCustomerKey(QString id, Core::CustomerKey key, Core::Millis keepOthersMs, Done done);
    void revokeCustomerKey(QString id, QString keyId, Done done);
    void deleteCustomer(QString id, Done done);
    // One setting or another changed on the rules as committed (the toolbar's toggles).
    void updateRules(std::function<std::optional<std::string>(Core::EngineConfig&)> change, Done done);
    void importEntries(std::vector<Core::ListedEntry> rows, Done done);

Q_SIGNALS:
    void snapshot(Floodgate::Ui::SnapshotPtr snapshot);
    // Something the operator must see (a failed write, a stopped listener).
    void problem(const QString& message);

private:
    void deliver(const SnapshotPtr& s);
    Storage::Store::Done onGuiThread(Done done);

    ConsoleServices m_services;
    QThread m_thread;
    SnapshotWorker* m_worker = nullptr;  // lives on m_thread
    SnapshotPtr m_latest;
};

} // namespace Floodgate::Ui
