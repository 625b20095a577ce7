// SPDX-License-Identifier: GPL-3.0-or-later
// A cluster node's side of the sync (docs/CLUSTER.md): the gate a deciding
// thread passes before it counts a request of a shared entry (the error
// budget and the lease), the queue of entries that have something to
// report, the reports the sync thread takes and the acknowledgements it
// brings back. No I/O here: engine/cluster talks to Redis.
#include "core/EngineImpl.h"

#include <cstdio>

namespace Floodgate::Core {

namespace {

std::int32_t allowance(const std::uint32_t* s)
{
    return std::int32_t(s[0]);
}

void setAllowance(std::uint32_t* s, std::int64_t v)
{
    v = std::clamp<std::int64_t>(v, INT32_MIN, INT32_MAX);
    s[0] = std::uint32_t(std::int32_t(v));
}

Millis leaseEnd(const std::uint32_t* s)
{
    return Millis(std::uint64_t(s[3]) | (std::uint64_t(s[4]) << 32));
}

void setLeaseEnd(std::uint32_t* s, Millis end)
{
    s[3] = std::uint32_t(std::uint64_t(end));
    s[4] = std::uint32_t(std::uint64_t(end) >> 32);
}

// The levels and the sync cells of the entry a queued key names, under the
// configuration in force; null when the configuration no longer has it.
struct EntryShape {
    const std::vector<LevelSpec>* levels = nullptr;
    const SharedEntry* shared = nullptr;
    std::uint32_t signature = 0;
};

EntryShape shapeOf(const Compiled& c, std::uint8_t table, const TableKey& key)
{
    if (!c.clustered)
        return {};
    if (table == CUSTOMER_TABLE) {
        const auto tag = c.customerByTag.find(customerTag(key));
        if (tag == c.customerByTag.end())
            return {};
        const auto cu = c.customers.find(tag->second);
        if (cu == c.customers.end() || !(cu->second.key == key))
            return {};
        return {&cu->second.levels, &cu->second.shared, cu->second.signature};
    }
    if (key.space == CLIENT_SPACE)
        return c.clientLevels.empty() ? EntryShape{} : EntryShape{&c.clientLevels, &c.clientShared, c.clientSignature};
    if (key.space - 1 < c.rules.size()) {
        const CompiledRule& r = c.rules[key.space - 1];
        if (r.space == key.space)
            return {&r.levels, &r.shared, r.signature};
    }
    return {};  // a Range window, or a rule that is gone
}

// When an entry with no lease and most of its budget reports at the
// latest (takeReports takes it a margin before its "lease" ends): a quiet
// lease from now, so that clients first seen at the same moment report
// spread over the quiet leases' range.
Millis quietReportBy(Millis now, const TableKey& key)
{
    return now + quietLeaseMs(key) + Tuning::clusterLeaseMarginMs;
}

std::string entryName(std::uint8_t table, const TableKey& k, std::uint64_t shape)
{
    char buf[128];
    std::snprintf(buf, sizeof buf, "%c:%016llx%016llx%016llx:%x:%016llx", table == CUSTOMER_TABLE ? 'u' : 'c',
                  static_cast<unsigned long long>(k.a), static_cast<unsigned long long>(k.b),
                  static_cast<unsigned long long>(k.extra), static_cast<unsigned>(k.space),
                  static_cast<unsigned long long>(shape));
    return buf;
}

} // namespace

Millis quietLeaseMs(const TableKey& key)
{
    // mix64 has no per-process seed: every node computes the same.
    const std::uint64_t h = mix64(key.a ^ mix64(key.b ^ mix64(key.extra ^ mix64(std::uint64_t(key.space) + GOLDEN_GAMMA))));
    static_assert(Tuning::clusterQuietSpreadMs > 0);
    return Tuning::clusterQuietReportMs + Millis(h % std::uint64_t(Tuning::clusterQuietSpreadMs));
}

std::uint32_t Engine::Impl::clusterBudget(std::uint32_t minLimit) const
{
    const std::uint64_t nodes = std::max<std::uint32_t>(1, cluster.nodes.load(std::memory_order_relaxed));
    const std::uint64_t e = std::uint64_t(minLimit) * Tuning::clusterEpsilonPerMille / 1000 / nodes;
    return std::uint32_t(std::clamp<std::uint64_t>(e, 1, INT32_MAX / 4));
}

void Engine::Impl::enqueue(const QueuedEntry& e)
{
    std::lock_guard lock(cluster.queueMutex);
    cluster.queue.push_back(e);
}

bool ClusterGate::admit()
{
    std::uint32_t* s = sync;
    if (!(s[2] & SyncCells::Ready)) {
        // A new entry: the error budget, no lease yet. Its first report
        // waits while the budget lasts, up to its quiet lease, so a client
        // far below its limits costs no report per request.
        setAllowance(s, budget);
        setLeaseEnd(s, quietReportBy(now, entry.key));
        s[2] |= SyncCells::Ready;
    }
    if (state == ClusterState::Up) {
        // A lease that lapsed with no report on its way to renew it: only
        // the error budget is left, less what is still unreported. A client
        // back after a quiet spell is a new one: it reports within its
        // quiet lease, or once half the budget is spent.
        const Millis end = leaseEnd(s);
        if (end != 0 && now >= end && !(s[2] & SyncCells::InFlight)) {
            setAllowance(s, std::min<std::int64_t>(allowance(s), std::int64_t(budget) - std::int64_t(s[1])));
            setLeaseEnd(s, s[1] == 0 ? quietReportBy(now, entry.key) : 0);
            s[2] &= ~(SyncCells::Leased | SyncCells::QuietLease);
        }
        if (allowance(s) <= 0) {
            if (!waited) {
                waiting = true;
                urgent();
                return false;
            }
            impl->cluster.overdrafts.fetch_add(1, std::memory_order_relaxed);
        }
        setAllowance(s, std::int64_t(allowance(s)) - 1);
        // A lease spent: renew it while the budget lasts. Without one, half
        // the budget spent (E = 1: all of it) is worth a report at once.
        const std::int64_t low = (s[2] & SyncCells::Leased) ? std::int64_t(budget) : (std::int64_t(budget) + 1) / 2;
        if (allowance(s) < low)
            urgent();
    }
    if (s[1] != UINT32_MAX)
        ++s[1];
    if (!(s[2] & SyncCells::Queued)) {
        s[2] |= SyncCells::Queued;
        impl->enqueue(entry);
    }
    return true;
}

void ClusterGate::giveBack()
{
    std::uint32_t* s = sync;
    if (state == ClusterState::Up)
        setAllowance(s, std::int64_t(allowance(s)) + 1);
    if (s[1] > 0)
        --s[1];
}

void ClusterGate::refresh()
{
    if (state == ClusterState::Up)
        urgent();
}

void ClusterGate::urgent()
{
    if (sync[2] & SyncCells::Urgent)
        return;  // already in the queue to look at now (Urgent implies Queued)
    sync[2] |= SyncCells::Urgent;
    wake = true;
    // Into the queue to look at now, whether it was not queued yet or is
    // queued but waiting for its time. A report in flight is queued again
    // by its acknowledgement.
    if (!(sync[2] & SyncCells::InFlight)) {
        sync[2] |= SyncCells::Queued;
        impl->enqueue(entry);
    }
}

void Engine::enableCluster()
{
    m->cluster.enabled = true;
    auto cfg = config();
    auto compiled = compile(cfg, true);
    m->publish([&](Published& p) {
        p.clients = clientTable(cfg->settings.maxTrackedKeys, compiled->tableStride);
        p.customers = std::make_shared<KeyTable>(std::max<std::size_t>(1024, cfg->customers.size() * 2), compiled->customerStride);
        p.compiled = compiled;
    });
}

bool Engine::clustered() const
{
    return m->cluster.enabled;
}

void Engine::setClusterState(ClusterState state, std::uint32_t nodes)
{
    m->cluster.nodes.store(std::max<std::uint32_t>(1, nodes), std::memory_order_relaxed);
    m->cluster.state.store(state, std::memory_order_release);
}

ClusterState Engine::clusterState() const
{
    return m->cluster.state.load(std::memory_order_acquire);
}

std::uint32_t Engine::clusterNodes() const
{
    return m->cluster.nodes.load(std::memory_order_relaxed);
}

void Engine::onClusterWork(std::function<void()> wake)
{
    m->cluster.wake = std::move(wake);
}

std::vector<SyncReport> Engine::takeReports(Millis now, std::size_t max, bool all)
{
    std::vector<QueuedEntry> pending;
    {
        std::lock_guard lock(m->cluster.queueMutex);
        pending.swap(m->cluster.queue);
    }
    auto& waiting = m->cluster.later;
    while (!waiting.empty() && (all || waiting.top().at <= now)) {
        pending.push_back(waiting.top().entry);
        waiting.pop();
    }
    std::vector<SyncReport> out;
    std::vector<QueuedEntry> later;
    const auto p = m->snapshot();
    const Compiled& c = *p->compiled;
    std::vector<std::uint32_t> counts;
    std::uint64_t givenUp = 0;
    for (const QueuedEntry& e : pending) {
        const EntryShape shape = shapeOf(c, e.table, e.key);
        if (!shape.levels)
            continue;  // the configuration changed under it: nothing to report
        if (out.size() >= max) {
            later.push_back(e);
            continue;
        }
        KeyTable& table = e.table == CUSTOMER_TABLE ? *p->customers : *p->clients;
        const std::uint32_t budget = m->clusterBudget(shape.shared->minLimit);
        Millis dueAt = 0;  // not due: when it will be
        table.update(e.key, now, [&](KeyTable::Header& h, std::uint32_t* cells) {
            if (h.signature != shape.signature)
                return;
            std::uint32_t* s = cells + shape.shared->sync;
            if (!(s[2] & SyncCells::Queued))
                return;
            if (s[2] & SyncCells::InFlight)
                return;  // one report on its way at a time; its acknowledgement queues it again if need be
            const Millis end = leaseEnd(s);
            const bool urgent = all || (s[2] & SyncCells::Urgent);
            const bool due = urgent || (s[1] > 0 && (end == 0 || end - now <= Tuning::clusterLeaseMarginMs));
            if (!due) {
                dueAt = end != 0 ? end - Tuning::clusterLeaseMarginMs : now + 1;
                return;
            }
            // A quiet lease about to end that the client has hardly used:
            // less than half the error budget admitted since the report that
            // got it. The node gives it up rather than renew it (a report to
            // Redis, to say little): from now on the client has what is left
            // of the budget, as a client back after its lease lapsed, and
            // reports when half of it is spent or a quiet lease from now,
            // whichever comes first. What this node admits that Redis has not
            // seen stays at most E (docs/CLUSTER.md, "A quiet lease hardly
            // used is given up").
            if (!urgent && (s[2] & SyncCells::QuietLease) && s[1] < budget / 2) {
                setAllowance(s, std::min<std::int64_t>(allowance(s), std::int64_t(budget) - std::int64_t(s[1])));
                s[2] &= ~(SyncCells::Leased | SyncCells::QuietLease);
                const Millis by = quietReportBy(now, e.key);
                setLeaseEnd(s, by);
                dueAt = by - Tuning::clusterLeaseMarginMs;
                ++givenUp;
                return;
            }
            SyncReport r;
            r.entry = entryName(e.table, e.key, shape.shared->shape);
            r.table = e.table;
            r.key = e.key;
            r.signature = h.signature;
            r.admitted = s[1];
            r.held = end > now ? std::uint32_t(std::max<std::int64_t>(0, std::int64_t(allowance(s)) - budget)) : 0;
            r.quietLeaseMs = quietLeaseMs(e.key);
            for (const LevelSpec& spec : *shape.levels) {
                const RemoteCounts own = ownCounts(spec, cells + spec.offset, now, counts);
                r.levels.push_back(SharedLevel{spec.algorithm, spec.limit, spec.periodMs, spec.bucketMs, own.stamp, counts, own.lockedUntil});
            }
            r.builtAt = now;
            s[1] = 0;
            // Still Queued (so deciding threads do not queue it twice) until
            // its acknowledgement says whether it needs another report.
            s[2] = (s[2] | SyncCells::InFlight) & ~SyncCells::Urgent;
            out.push_back(std::move(r));
        });
        if (dueAt != 0)
            waiting.push({dueAt, e});
    }
    m->cluster.laterSize.store(waiting.size(), std::memory_order_relaxed);
    if (!later.empty()) {
        std::lock_guard lock(m->cluster.queueMutex);
        m->cluster.queue.insert(m->cluster.queue.end(), later.begin(), later.end());
    }
    m->cluster.reports.fetch_add(out.size(), std::memory_order_relaxed);
    m->cluster.leasesGivenUp.fetch_add(givenUp, std::memory_order_relaxed);
    return out;
}

void Engine::applyAcks(const std::vector<SyncReport>& reports, const std::vector<SyncAck>& acks, Millis now)
{
    const auto p = m->snapshot();
    const Compiled& c = *p->compiled;
    std::vector<QueuedEntry> requeue;
    for (std::size_t i = 0; i < reports.size() && i < acks.size(); ++i) {
        const SyncReport& r = reports[i];
        const SyncAck& a = acks[i];
        const EntryShape shape = shapeOf(c, r.table, r.key);
        if (!shape.levels || shape.signature != r.signature)
            continue;
        KeyTable& table = r.table == CUSTOMER_TABLE ? *p->customers : *p->clients;
        const std::uint32_t budget = m->clusterBudget(shape.shared->minLimit);
        bool again = false;
        table.update(r.key, now, [&](KeyTable::Header& h, std::uint32_t* cells) {
            if (h.signature != r.signature)
                return;
            std::uint32_t* s = cells + shape.shared->sync;
            s[2] &= ~SyncCells::InFlight;
            if (!a.ok) {
                // Not delivered: what it carried is unreported again (reports
                // are absolute, so the next one carries it anyway).
                s[1] = std::uint32_t(std::min<std::uint64_t>(std::uint64_t(s[1]) + r.admitted, UINT32_MAX));
                again = true;
                return;
            }
            const std::vector<LevelSpec>& levels = *shape.levels;
            for (std::size_t l = 0; l < levels.size() && l < a.others.size(); ++l) {
                const SharedLevel& o = a.others[l];
                storeRemote(levels[l], cells + levels[l].offset,
                            RemoteCounts{o.stamp, o.counts.data(), o.counts.size(), o.lockedUntil});
            }
            // What may be admitted now: the lease Redis holds for this node
            // and the error budget, less what was admitted since the report.
            const std::uint64_t lease = std::uint64_t(r.held) + a.granted;
            setAllowance(s, std::int64_t(lease) + budget - std::int64_t(s[1]));
            s[SyncCells::Reserved] = a.reserved;
            s[SyncCells::ReservedLapse] = a.reservedLapseAt == 0 ? 0 : std::max<std::uint32_t>(1, std::uint32_t(a.reservedLapseAt));
            s[2] |= SyncCells::Ready;
            // Redis started the lease after the report was built: ending it
            // a margin before build time + lease ends it here first.
            setLeaseEnd(s, lease > 0 ? r.builtAt + a.leaseMs - Tuning::clusterLeaseMarginMs : 0);
            if (lease > 0)
                s[2] |= SyncCells::Leased;
            else
                s[2] &= ~SyncCells::Leased;
            if (lease > 0 && a.leaseMs > Tuning::clusterLeaseMs)
                s[2] |= SyncCells::QuietLease;
            else
                s[2] &= ~SyncCells::QuietLease;
            if (s[1] > 0 || (s[2] & SyncCells::Urgent))
                again = true;
            else
                s[2] &= ~SyncCells::Queued;
        });
        if (again)
            requeue.push_back(QueuedEntry{r.table, r.key, r.signature});
    }
    if (!requeue.empty()) {
        std::lock_guard lock(m->cluster.queueMutex);
        m->cluster.queue.insert(m->cluster.queue.end(), requeue.begin(), requeue.end());
    }
}

void Engine::resyncAll(Millis now)
{
    const auto p = m->snapshot();
    const Compiled& c = *p->compiled;
    if (!c.clustered)
        return;
    std::vector<QueuedEntry> all;
    auto visit = [&](std::uint8_t tableId, KeyTable& table) {
        table.forEachMutable(now, [&](KeyTable::Header& h, std::uint32_t* cells) {
            const EntryShape shape = shapeOf(c, tableId, h.key());
            if (!shape.levels || h.signature != shape.signature)
                return;
            std::uint32_t* s = cells + shape.shared->sync;
            if (s[2] & SyncCells::Queued)
                return;
            s[2] |= SyncCells::Queued;
            all.push_back(QueuedEntry{tableId, h.key(), h.signature});
        });
    };
    visit(CLIENT_TABLE, *p->clients);
    visit(CUSTOMER_TABLE, *p->customers);
    std::lock_guard lock(m->cluster.queueMutex);
    m->cluster.queue.insert(m->cluster.queue.end(), all.begin(), all.end());
}

ClusterCounters Engine::clusterCounters() const
{
    ClusterCounters k;
    k.waits = m->cluster.waits.load(std::memory_order_relaxed);
    k.overdrafts = m->cluster.overdrafts.load(std::memory_order_relaxed);
    k.reports = m->cluster.reports.load(std::memory_order_relaxed);
    k.leasesGivenUp = m->cluster.leasesGivenUp.load(std::memory_order_relaxed);
    k.scheduled = m->cluster.laterSize.load(std::memory_order_relaxed);
    std::lock_guard lock(m->cluster.queueMutex);
    k.queued = m->cluster.queue.size() + k.scheduled;
    return k;
}

} // namespace Floodgate::Core
