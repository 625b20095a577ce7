// SPDX-License-Identifier: GPL-3.0-or-later
// One refresh of the console: a bounded copy of everything the views show,
// taken off the GUI thread (SnapshotWorker) and handed over whole. The GUI
// thread only merges it into its models and charts.
#pragma once

#include "cluster/ClusterSync.h"
#include "core/AddressList.h"
#include "core/Cluster.h"
#include "ui/Format.h"
#include "http/LimiterLog.h"
#include "core/Rules.h"
#include "core/Snapshot.h"
#include "storage/Store.h"
#include "storage/Tables.h"

#include <QMetaType>
#include <QString>

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace Floodgate::Ui {

struct ClientRow {
    ClientRow() = default;
    // Formats the key once, on the snapshot thread: the GUI thread merges
    // and sorts rows by it on every refresh.
    explicit ClientRow(Core::ClientSummary s)
        : summary(std::move(s))
        , key(qs(summary.keyText()))
        , sortKey(addressSortKey(Core::Cidr(summary.key, summary.keyPrefix)))
    {
    }
    Core::ClientSummary summary;
    QString key;          // "203.0.113.7", "2001:db8:1:2::/64"
    QString sortKey;      // addressSortKey of the range
    QString lastRequest;  // "GET /search" from the request samples (may be empty)
    QString userAgent;

    // The client's live buckets that are whole, oldest first: all but the
    // newest, which is still filling (drawn per whole bucket, it would make
    // every busy client's line fall at its end). What the busiest-clients
    // chart and the Clients sparkline draw.
    std::span<const std::uint32_t> wholeLiveBuckets() const
    {
        return std::span<const std::uint32_t>(summary.live).first(summary.live.size() - 1);
    }
};

// What changed in one access list since the previous snapshot, worked out on
// the snapshot thread so the GUI's work is the size of the change, not of
// the list (100,000 entries must not stall the window when one is added).
struct ListDelta {
    bool reset = false;                    // start over: `upserts` is the whole list
    std::vector<Core::ListEntry> upserts;  // new or changed entries, by range
    std::vector<Core::Cidr> removals;      // removed, or ended
    bool empty() const { return !reset && upserts.empty() && removals.empty(); }
};

struct ConsoleSnapshot {
    Core::Millis now = 0;
    Core::EngineCounters counters;
    Core::TrackedKeys tracked;  // what the tracked keys are (counted with `clients`)
    // Complete seconds not delivered before, oldest first (the first
    // snapshot carries the last hour).
    std::vector<Core::SecondCounts> seconds;
    std::vector<ClientRow> clients;  // by recent rate, most first (bounded)
    Core::LiveBuckets buckets;       // the 3 s x 20 live view, top addresses per bucket
    std::optional<Core::ClientDetail> followed;  // the client the buckets view follows
    std::string followedText;                    // what was asked for
    std::vector<Http::Event> events;             // refusals since the previous snapshot
    std::vector<Storage::AuditRow> audit;        // audit rows since the previous snapshot
    std::array<ListDelta, 2> lists;  // by Core::ListKind; the blocklist includes the automatic bans
    Core::ListSet listSet;  // the lists themselves, as published with this snapshot
    std::shared_ptr<const Core::EngineConfig> config;        // in force (with command-line overrides)
    std::shared_ptr<const Core::EngineConfig> storedConfig;  // as stored: what the rules form edits
    std::map<std::string, std::vector<Core::LevelUsage>> customerUsage;  // by customer id
    std::optional<Storage::Problem> storeProblem;  // the latest background storage problem
    std::optional<Core::Problem> logProblem;        // the latest limiter.log write failure
    // With --redis: the cluster as this node sees it, and the engine's side
    // of the sync (waits, overdrafts). Nothing on a single node.
    std::optional<Cluster::ClusterStatus> cluster;
    Core::ClusterCounters clusterCounters;
    bool listening = true;
    bool demo = false;
    QString listenUrl;
};

using SnapshotPtr = std::shared_ptr<const ConsoleSnapshot>;

} // namespace Floodgate::Ui

Q_DECLARE_METATYPE(Floodgate::Ui::SnapshotPtr)
