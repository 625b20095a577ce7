// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/SnapshotWorker.h"

#include "core/Engine.h"
#include "ui/Format.h"
#include "core/Hash.h"
#include "http/RequestSamples.h"
#include "storage/Store.h"
#include "core/Tuning.h"

#include <algorithm>

namespace Floodgate::Ui {

namespace {
constexpr std::size_t MAX_SEEN = 20'000;  // clients whose last request is remembered
constexpr std::size_t TOP_PER_BUCKET = 12;
} // namespace

SnapshotWorker::SnapshotWorker(ConsoleServices services, QObject* parent)
    : QObject(parent)
    , m_services(std::move(services))
{
}

void SnapshotWorker::follow(const std::string& address)
{
    std::lock_guard lock(m_mutex);
    m_followed = address;
}

void SnapshotWorker::start()
{
    if (!m_timer) {
        m_timer = new QTimer(this);
        m_timer->setInterval(IntervalMs);
        connect(m_timer, &QTimer::timeout, this, &SnapshotWorker::tick);
    }
    m_timer->start();
    tick();
}

void SnapshotWorker::stop()
{
    if (m_timer)
        m_timer->stop();
}

void SnapshotWorker::tick()
{
    Q_EMIT ready(take());
}

void SnapshotWorker::takeNow()
{
    tick();
}

void SnapshotWorker::diffLists(ConsoleSnapshot& s)
{
    auto same = [](const Core::ListEntry& a, const Core::ListEntry& b) {
        return a.expiresAt == b.expiresAt && a.source == b.source && a.createdAt == b.createdAt && a.reason == b.reason
            && a.createdBy == b.createdBy;
    };
    for (Core::ListKind kind : {Core::ListKind::Safelist, Core::ListKind::Blocklist}) {
        ListState& st = m_lists[std::size_t(kind)];
        ListDelta& d = s.lists[std::size_t(kind)];
        const auto& list = kind == Core::ListKind::Safelist ? s.listSet.safelist : s.listSet.blocklist;
        const auto automatic = kind == Core::ListKind::Blocklist ? s.listSet.automatic : nullptr;
        if (st.started && list == st.list && automatic == st.automatic) {
            // The same lists: only time passed. Entries that ended leave.
            for (auto it = st.shown.begin(); it != st.shown.end();) {
                if (!it->second.activeAt(s.now)) {
                    d.removals.push_back(it->first);
                    it = st.shown.erase(it);
                } else {
                    ++it;
                }
            }
            continue;
        }
        d.reset = !st.started;
        st.started = true;
        st.list = list;
        st.automatic = automatic;
        std::unordered_map<Core::Cidr, Core::ListEntry, Core::CidrHash> next;
        next.reserve(st.shown.size() + 16);
        for (const Core::AddressList* l : {list.get(), automatic.get()}) {
            if (!l)
                continue;
            l->forEach([&](const Core::ListEntry& e) {
                if (!e.activeAt(s.now))
                    return;
                auto old = st.shown.find(e.range);
                if (d.reset || old == st.shown.end() || !same(old->second, e))
                    d.upserts.push_back(e);
                next.insert_or_assign(e.range, e);
            });
        }
        if (!d.reset)
            for (const auto& [range, e] : st.shown)
                if (!next.count(range))
                    d.removals.push_back(range);
        st.shown = std::move(next);
    }
}

SnapshotPtr SnapshotWorker::take()
{
    std::lock_guard lock(m_mutex);
    Core::Engine& engine = *m_services.engine;
    auto s = std::make_shared<ConsoleSnapshot>();
    const Core::Millis now = m_services.clock->now();
    s->now = now;
    s->counters = engine.counters(now);

    // Per-second counts: the complete seconds not delivered yet.
    const Core::Millis current = Core::floorDiv(now, 1000) * 1000;
    const std::size_t wanted = m_lastSecond == 0 ? Core::Tuning::statsSeconds
                                                 : std::size_t(std::clamp<Core::Millis>((current - m_lastSecond) / 1000, 0, 3600));
    if (wanted > 0) {
        auto seconds = engine.perSecond(now, wanted + 1);
        seconds.pop_back();  // the second holding `now` is still filling
        for (auto& sc : seconds)
            if (sc.second > m_lastSecond)
                s->seconds.push_back(sc);
        if (!s->seconds.empty())
            m_lastSecond = s->seconds.back().second;
    }

    // What the clients asked for last, from the listener's samples.
    if (m_services.samples) {
        for (const Http::RequestSample& r : m_services.samples->drain()) {
            const std::string key = engine.countingRange(r.client).toString();
            Seen& seen = m_seen[key];
            if (r.time >= seen.at) {
                seen.at = r.time;
                seen.request = QString::fromUtf8(r.method) + QLatin1Char(' ') + QString::fromUtf8(r.path);
                seen.userAgent = QString::fromUtf8(r.userAgent);
            }
        }
        if (m_seen.size() > MAX_SEEN) {
            // Forget the longest unseen half.
            std::vector<Core::Millis> times;
            times.reserve(m_seen.size());
            for (const auto& [k, v] : m_seen)
                times.push_back(v.at);
            std::nth_element(times.begin(), times.begin() + std::ptrdiff_t(times.size() / 2), times.end());
            const Core::Millis cut = times[times.size() / 2];
            std::erase_if(m_seen, [cut](const auto& kv) { return kv.second.at < cut; });
        }
    }

    for (Core::ClientSummary& c : engine.topClients(MaxClients, now, &s->tracked)) {
        const std::string range = Core::Cidr(c.key, c.keyPrefix).toString();
        ClientRow row(std::move(c));
        if (auto it = m_seen.find(range); it != m_seen.end()) {
            row.lastRequest = it->second.request;
            row.userAgent = it->second.userAgent;
        }
        s->clients.push_back(std::move(row));
    }
    s->buckets = engine.liveBuckets(TOP_PER_BUCKET, now);
    if (!m_followed.empty()) {
        s->followedText = m_followed;
        if (auto cidr = Core::Cidr::parse(m_followed))
            s->followed = engine.client(cidr->address(), now);
    }
    if (m_services.log) {
        s->events = m_services.log->events(m_lastEvent, Core::Tuning::maxEventsKept);
        if (!s->events.empty())
            m_lastEvent = s->events.back().id;
    }
    if (m_services.store) {
        try {
            s->audit = m_services.store->audit(m_lastAudit, 1000);
            if (!s->audit.empty())
                m_lastAudit = s->audit.back().id;
        } catch (const std::exception&) {
            // The audit trail shows up on the next tick; reading it never
            // takes the console down.
        }
    }
    s->listSet = engine.lists();
    diffLists(*s);
    s->config = engine.config();
    if (m_services.store && (s->config != m_configSeen || !m_stored)) {
        try {
            m_stored = std::make_shared<const Core::EngineConfig>(m_services.store->config());
            m_configSeen = s->config;
        } catch (const std::exception&) {
            // Read again on the next refresh.
        }
    }
    s->storedConfig = m_stored;
    for (const Core::Customer& c : s->config->customers)
        if (auto usage = engine.customerUsage(c.id, now))
            s->customerUsage.emplace(c.id, std::move(*usage));
    if (m_services.store)
        s->storeProblem = m_services.store->lastProblem();
    if (m_services.log)
        s->logProblem = m_services.log->lastProblem();
    if (m_services.clusterStatus) {
        s->cluster = m_services.clusterStatus();
        s->clusterCounters = engine.clusterCounters();
    }
    s->listening = !m_services.listening || m_services.listening();
    s->demo = m_services.demoRunning && m_services.demoRunning();
    if (m_services.listenUrl)
        s->listenUrl = qs(m_services.listenUrl());
    return s;
}

} // namespace Floodgate::Ui
