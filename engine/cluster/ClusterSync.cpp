// SPDX-License-Identifier: MIT
#include "cluster/ClusterSync.h"

#include "cluster/RedisConnection.h"
#include "cluster/Scripts.h"
#include "cluster/SyncProtocol.h"
#include "core/Engine.h"
#include "core/Hash.h"
#include "core/Tuning.h"

#include <charconv>
#include <condition_variable>
#include <deque>
#include <cstdio>
#include <mutex>
#include <random>
#include <set>
#include <thread>

namespace Floodgate::Cluster {

namespace {

// Redis keys. Everything Floodgate writes starts with "fg:".
constexpr const char* NODES_KEY = "fg:nodes";    // hash: node -> "lastSeenMs|requests/s|address"
constexpr const char* EPOCH_KEY = "fg:epoch";    // a random id: gone means Redis lost its data
constexpr const char* SECRET_KEY = "fg:secret";  // the cluster's hash key (docs/CLUSTER.md, security)
constexpr const char* ENTRY_PREFIX = "fg:e:";
constexpr const char* SAFELIST_KEY = "fg:l:safelist";  // hash: range -> entry (SyncProtocol.h)
constexpr const char* BLOCKLIST_KEY = "fg:l:blocklist";
constexpr const char* LIST_STREAM = "fg:lc";            // every list change, in order
constexpr const char* LISTS_SEEDED = "fg:lists:seeded"; // the cluster has lists (possibly empty)
constexpr std::size_t MAX_PENDING_LIST_CHANGES = 100'000;

constexpr Core::Millis TICK_MS = 50;                // the sync's pace when nothing is urgent
constexpr Core::Millis HEARTBEAT_MS = Core::SECOND; // a node's heartbeat
constexpr Core::Millis ALIVE_MS = Core::Tuning::clusterAliveMs; // a node counts while its heartbeat is this recent
constexpr Core::Millis GONE_MS = Core::MINUTE;      // a node silent this long leaves the list
constexpr Core::Millis PROBE_MS = Core::SECOND;     // while the breaker is open: one try per second
constexpr std::size_t BATCH = 512;                  // entry reports per script call
constexpr std::int64_t SLOW_MICROS = Core::Tuning::clusterSlowMicros;       // a batch slower than this: "degraded"
constexpr Core::Millis ERROR_MEMORY_MS = Core::Tuning::clusterErrorMemoryMs; // and for this long after a failed call

std::string hex64(std::uint64_t v)
{
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

std::optional<Core::SipKey> parseSecret(const std::string& s)
{
    if (s.size() != 32)
        return std::nullopt;
    Core::SipKey k;
    for (int half = 0; half < 2; ++half) {
        std::uint64_t v = 0;
        const char* b = s.data() + 16 * half;
        const auto r = std::from_chars(b, b + 16, v, 16);
        if (r.ec != std::errc() || r.ptr != b + 16)
            return std::nullopt;
        (half == 0 ? k.k0 : k.k1) = v;
    }
    return k;
}

std::string randomId()
{
    std::random_device rd;
    return hex64((std::uint64_t(rd()) << 32) ^ rd()) + hex64((std::uint64_t(rd()) << 32) ^ rd());
}

} // namespace

struct ClusterSync::State {
    State(const Options& o)
        : conn(o.url, o.connectTimeout, o.ioTimeout), report(std::string(Scripts::report)),
          listChange(std::string(Scripts::listChange)), listSeed(std::string(Scripts::listSeed)), breaker(PROBE_MS)
    {
    }
    RedisConnection conn;
    Script report;
    Script listChange;
    Script listSeed;
    // The lists: changes made here, waiting to be sent; how changes made
    // elsewhere are applied; where this node is in the change stream.
    std::mutex listMutex;
    std::deque<Core::ListChange> outgoing;
    std::uint64_t droppedListChanges = 0;
    std::function<void(const Core::ListChange&)> applyRemote;
    std::string streamId = "0-0";
    std::string listsLine;  // what join() found (for its start-up line)
    Breaker breaker;
    ClockOffset offset;
    std::string epoch;
    bool resync = false;
    Core::Millis nextHeartbeat = 0;

    std::thread thread;
    std::mutex wakeMutex;
    std::condition_variable wakeCv;
    bool wake = false;
    bool stopping = false;

    mutable std::mutex statusMutex;  // status and lastErrorAt: written by the sync thread, read by anyone; address
    ClusterStatus status;
    Core::Millis lastErrorAt = -ERROR_MEMORY_MS;
    std::string address;  // where this node serves, as its heartbeat says (setAddress)
    std::atomic<bool> addressChanged{false};  // a heartbeat at the next tick, not within a second
};

ClusterSync::ClusterSync(Core::Engine& engine, Options options, const Core::Clock& base)
    : m_engine(engine), m_options(std::move(options)), m_clock(base), m_state(std::make_unique<State>(m_options))
{
    m_state->status.url = m_options.url.redacted();
    m_state->status.node = m_options.node;
    m_state->address = m_options.address;
}

void ClusterSync::setAddress(std::string address)
{
    {
        std::lock_guard lock(m_state->statusMutex);
        m_state->address = std::move(address);
    }
    m_state->addressChanged = true;
    {
        std::lock_guard lock(m_state->wakeMutex);
        m_state->wake = true;
    }
    m_state->wakeCv.notify_one();
}

ClusterSync::~ClusterSync()
{
    stop();
}

namespace {

// Everything the sync thread does with one connection, in order; a failure
// anywhere opens the breaker and the engine decides cut off.
class Session {
public:
    Session(Core::Engine& engine, const ClusterSync::Options& options, ClusterClock& clock, ClusterSync::State& s, const Core::Clock& base)
        : m_engine(engine), m_options(options), m_clock(clock), m_s(s), m_base(base)
    {
    }

    // Connected and PONG: the hash key, the epoch, the first heartbeat.
    bool greet(Core::Millis now)
    {
        // The cluster's hash key: the first node sets it, every node uses it.
        std::vector<Reply> r;
        const std::string mine = hex64(Core::processSipKey().k0) + hex64(Core::processSipKey().k1);
        if (!call({Command{"SET", SECRET_KEY, mine, "NX"}, Command{"GET", SECRET_KEY}}, r, now))
            return false;
        const auto key = r[1].kind == Reply::Kind::String ? parseSecret(r[1].text) : std::nullopt;
        if (!key)
            return failed(Outcome{Failure::Protocol, "redis at " + m_options.url.address() + ": " + SECRET_KEY + " holds something else than a Floodgate key (delete it)"}, now);
        if (key->k0 != Core::processSipKey().k0 || key->k1 != Core::processSipKey().k1) {
            Core::adoptSipKey(*key);
            // The customers' and the header rules' keys are hashed when a
            // configuration is compiled: compile again under the shared key.
            if (auto cfg = m_engine.config())
                m_engine.setConfig(*cfg);
        }
        // What was changed here while cut off goes first, then the lists are
        // brought level with the cluster's.
        return heartbeat(now) && sendListChanges(now) && syncLists(now);
    }

    bool heartbeat(Core::Millis now)
    {
        ServerTime t;
        const Core::Millis before = m_base.now();
        const Outcome o = m_s.conn.time(t);
        const Core::Millis after = m_base.now();
        if (!o.ok())
            return failed(o, now);
        m_s.offset.sample(before, after, t.serverMicros);
        m_clock.setOffset(m_s.offset.offsetMs());
        const Core::Millis redisNow = t.serverMicros / 1000;

        char rate[32];
        std::snprintf(rate, sizeof rate, "%.1f", m_options.requestRate ? m_options.requestRate() : 0.0);
        std::vector<Reply> r;
        std::string address;
        {
            std::lock_guard lock(m_s.statusMutex);
            address = m_s.address;
        }
        const std::string value = std::to_string(redisNow) + "|" + rate + "|" + address;
        if (!call({Command{"HSET", NODES_KEY, m_options.node, value}, Command{"HGETALL", NODES_KEY}, Command{"GET", EPOCH_KEY}}, r, now))
            return false;

        std::vector<NodeStatus> nodes;
        std::vector<std::string> gone;
        std::uint32_t alive = 0;
        for (std::size_t i = 0; i + 1 < r[1].elements.size(); i += 2) {
            NodeStatus n;
            n.name = r[1].elements[i].text;
            const std::string& v = r[1].elements[i + 1].text;
            const auto bar1 = v.find('|');
            const auto bar2 = bar1 == std::string::npos ? std::string::npos : v.find('|', bar1 + 1);
            if (bar2 == std::string::npos)
                continue;
            std::from_chars(v.data(), v.data() + bar1, n.lastSeenMs);
            n.requestsPerSecond = std::strtod(v.substr(bar1 + 1, bar2 - bar1 - 1).c_str(), nullptr);
            n.address = v.substr(bar2 + 1);
            n.self = n.name == m_options.node;
            if (redisNow - n.lastSeenMs > GONE_MS) {
                gone.push_back(n.name);
                continue;
            }
            if (redisNow - n.lastSeenMs <= ALIVE_MS)
                ++alive;
            nodes.push_back(std::move(n));
        }
        if (!gone.empty()) {
            Command hdel{"HDEL", NODES_KEY};
            for (const std::string& g : gone)
                hdel.args.push_back(g);
            std::vector<Reply> ignored;
            if (!call({hdel}, ignored, now))
                return false;
        }

        // The epoch: gone (or another) means Redis lost what it held.
        const std::string epoch = r[2].kind == Reply::Kind::String ? r[2].text : std::string();
        if (epoch.empty() || epoch != m_s.epoch) {
            if (!m_s.epoch.empty() || epoch.empty()) {
                std::vector<Reply> e;
                if (!call({Command{"SET", EPOCH_KEY, randomId(), "NX"}, Command{"GET", EPOCH_KEY}}, e, now))
                    return false;
                const bool lost = !m_s.epoch.empty();
                m_s.epoch = e[1].text;
                if (lost) {
                    // Seed it again from what this node holds (docs/CLUSTER.md, recovery).
                    m_engine.resyncAll(m_clock.now());
                    m_s.resync = true;
                    std::vector<Reply> ignored;
                    const std::string mine = hex64(Core::processSipKey().k0) + hex64(Core::processSipKey().k1);
                    if (!call({Command{"SET", SECRET_KEY, mine, "NX"}}, ignored, now))
                        return false;
                }
            } else {
                m_s.epoch = epoch;
            }
        }

        m_engine.setClusterState(Core::ClusterState::Up, std::max<std::uint32_t>(1, alive));
        std::lock_guard lock(m_s.statusMutex);
        m_s.status.nodes = std::move(nodes);
        m_s.status.nodesCounting = std::max<std::uint32_t>(1, alive);
        m_s.status.clockOffsetMs = m_s.offset.offsetMs();
        return true;
    }

    // The changes made here while nothing was sent (or since the last tick),
    // in order; false when Redis failed them (they stay queued).
    bool sendListChanges(Core::Millis now)
    {
        std::vector<Core::ListChange> batch;
        {
            std::lock_guard lock(m_s.listMutex);
            while (!m_s.outgoing.empty() && batch.size() < 256) {
                batch.push_back(std::move(m_s.outgoing.front()));
                m_s.outgoing.pop_front();
            }
        }
        if (batch.empty())
            return true;
        std::vector<Command> commands;
        for (const Core::ListChange& c : batch) {
            const std::string list = Core::toString(c.kind);
            commands.push_back(Command::eval(m_s.listChange, {c.kind == Core::ListKind::Safelist ? SAFELIST_KEY : BLOCKLIST_KEY, LIST_STREAM, LISTS_SEEDED},
                                             {m_options.node, c.removed ? "del" : "put", list, c.entry.range.toString(),
                                              c.removed ? std::string() : encodeEntry(c.entry)}));
        }
        std::vector<Reply> replies;
        if (!call(commands, replies, now)) {
            std::lock_guard lock(m_s.listMutex);
            for (auto it = batch.rbegin(); it != batch.rend(); ++it)
                m_s.outgoing.push_front(std::move(*it));
            return false;
        }
        return true;
    }

    // The changes other nodes made since this node last looked.
    bool readListChanges(Core::Millis now)
    {
        std::vector<Reply> r;
        if (!call({Command{"XREAD", "COUNT", "512", "STREAMS", LIST_STREAM, m_s.streamId}}, r, now))
            return false;
        // [[stream, [[id, [field, value, ...]], ...]]], or nil when nothing is new.
        if (r[0].kind != Reply::Kind::Array || r[0].elements.empty() || r[0].elements[0].elements.size() != 2)
            return true;
        for (const Reply& item : r[0].elements[0].elements[1].elements) {
            if (item.elements.size() != 2)
                continue;
            m_s.streamId = item.elements[0].text;
            const std::vector<Reply>& f = item.elements[1].elements;
            std::string node, op, list, range, entry;
            for (std::size_t i = 0; i + 1 < f.size(); i += 2) {
                const std::string& k = f[i].text;
                const std::string& v = f[i + 1].text;
                if (k == "node")
                    node = v;
                else if (k == "op")
                    op = v;
                else if (k == "list")
                    list = v;
                else if (k == "range")
                    range = v;
                else if (k == "entry")
                    entry = v;
            }
            if (node != m_options.node)
                apply(node, op == "del", list, range, entry);
        }
        return true;
    }

    // Joining (or back from an outage): the first node seeds the cluster's
    // lists from its own; any other takes the cluster's, so every node holds the same.
    bool syncLists(Core::Millis now)
    {
        std::vector<std::string> seed;
        std::size_t mine = 0;
        for (Core::ListKind kind : {Core::ListKind::Safelist, Core::ListKind::Blocklist})
            for (const Core::ListEntry& e : m_engine.list(kind)->entries()) {
                seed.push_back(Core::toString(kind));
                seed.push_back(e.range.toString());
                seed.push_back(encodeEntry(e));
                ++mine;
            }
        std::vector<Reply> r;
        // Where the stream is before the lists are read: a change made in
        // between is read twice, which puts the same entry again.
        if (!call({Command{"XREVRANGE", LIST_STREAM, "+", "-", "COUNT", "1"},
                   Command::eval(m_s.listSeed, {SAFELIST_KEY, BLOCKLIST_KEY, LISTS_SEEDED}, seed), Command{"HGETALL", SAFELIST_KEY},
                   Command{"HGETALL", BLOCKLIST_KEY}},
                  r, now))
            return false;
        if (!r[0].elements.empty() && !r[0].elements[0].elements.empty())
            m_s.streamId = r[0].elements[0].elements[0].text;
        if (r[1].integer == 1) {
            m_s.listsLine = "seeded the cluster's lists with this node's " + std::to_string(mine) + (mine == 1 ? " entry" : " entries");
            return true;
        }
        std::size_t taken = 0;
        std::size_t removed = 0;
        std::size_t index = 2;
        for (Core::ListKind kind : {Core::ListKind::Safelist, Core::ListKind::Blocklist}) {
            const Reply& hash = r[index++];
            std::set<std::string> theirs;
            const auto local = m_engine.list(kind);
            for (std::size_t i = 0; i + 1 < hash.elements.size(); i += 2) {
                theirs.insert(hash.elements[i].text);
                const Core::ListEntry* have = nullptr;
                if (const auto range = Core::Cidr::parse(hash.elements[i].text))
                    have = local->find(*range);
                if (have && encodeEntry(*have) == hash.elements[i + 1].text)
                    continue;
                if (apply("snapshot", false, Core::toString(kind), hash.elements[i].text, hash.elements[i + 1].text))
                    ++taken;
            }
            for (const Core::ListEntry& e : local->entries())
                if (!theirs.count(e.range.toString()) && apply("snapshot", true, Core::toString(kind), e.range.toString(), {}))
                    ++removed;
        }
        m_s.listsLine = "took the cluster's lists (" + std::to_string(taken) + (taken == 1 ? " entry" : " entries") + " added or changed here, "
            + std::to_string(removed) + " removed)";
        return true;
    }

    // One batch of reports; false when Redis failed it (the breaker is open then).
    bool send(std::vector<Core::SyncReport>& reports, Core::Millis now)
    {
        std::vector<std::string> keys;
        std::vector<std::string> args{m_options.node, std::to_string(m_engine.clusterNodes()), std::to_string(Core::Tuning::clusterLeaseMs)};
        keys.reserve(reports.size());
        for (const Core::SyncReport& r : reports) {
            keys.push_back(ENTRY_PREFIX + r.entry);
            args.push_back(encodeReport(r));
        }
        std::vector<Reply> replies;
        const Outcome o = m_s.conn.pipeline({Command::eval(m_s.report, std::move(keys), std::move(args))}, replies);
        std::vector<Core::SyncAck> acks(reports.size());
        Outcome problem = o;
        if (o.ok()) {
            const Reply& r = replies[0];
            if (r.isError())
                problem = m_s.conn.errorOutcome(r);
            else if (r.kind != Reply::Kind::Array || r.elements.size() != reports.size())
                problem = Outcome{Failure::Protocol, "redis at " + m_options.url.address() + ": the report script answered something unexpected"};
            else
                for (std::size_t i = 0; i < reports.size(); ++i)
                    if (auto a = decodeAck(r.elements[i].text, reports[i]))
                        acks[i] = std::move(*a);
        }
        const Core::Millis ackAt = m_clock.now();
        m_engine.applyAcks(reports, acks, ackAt);
        if (!problem.ok())
            return failed(problem, now);
        Core::Millis oldest = ackAt;
        for (const Core::SyncReport& r : reports)
            oldest = std::min(oldest, r.builtAt);
        std::lock_guard lock(m_s.statusMutex);
        ClusterStatus& st = m_s.status;
        st.roundTripMicros = m_s.conn.roundTripMicros();
        st.syncLagMs = ackAt - oldest;
        ++st.batches;
        st.reports += reports.size();
        st.lastBatchSize = reports.size();
        return true;
    }

    bool failed(const Outcome& o, Core::Millis now)
    {
        m_s.conn.close();
        m_s.breaker.failure(now);
        m_engine.setClusterState(Core::ClusterState::Down, m_engine.clusterNodes());
        std::lock_guard lock(m_s.statusMutex);
        m_s.lastErrorAt = now;
        ++m_s.status.errors;
        m_s.status.lastError = o.message;
        m_s.status.breakerOpen = true;
        m_s.status.breakerOpened = m_s.breaker.opened();
        return false;
    }

    // The breaker closes: Redis answered every step of greet().
    void recovered()
    {
        m_s.breaker.success();
        std::lock_guard lock(m_s.statusMutex);
        m_s.status.breakerOpen = false;
    }

private:
    bool apply(const std::string& from, bool removed, const std::string& list, const std::string& range, const std::string& entry)
    {
        if (!m_s.applyRemote)
            return false;
        Core::ListChange c;
        c.kind = list == "safelist" ? Core::ListKind::Safelist : Core::ListKind::Blocklist;
        c.removed = removed;
        c.actor = "cluster:" + from;
        if (removed) {
            const auto r = Core::Cidr::parse(range);
            if (!r)
                return false;
            c.entry.range = *r;
        } else {
            const auto e = decodeEntry(entry);
            if (!e)
                return false;
            c.entry = *e;
        }
        m_s.applyRemote(c);
        return true;
    }

    bool call(const std::vector<Command>& commands, std::vector<Reply>& replies, Core::Millis now)
    {
        const Outcome o = m_s.conn.pipeline(commands, replies);
        if (!o.ok())
            return failed(o, now);
        for (const Reply& r : replies)
            if (r.isError())
                return failed(m_s.conn.errorOutcome(r), now);
        return true;
    }

    Core::Engine& m_engine;
    const ClusterSync::Options& m_options;
    ClusterClock& m_clock;
    ClusterSync::State& m_s;
    const Core::Clock& m_base;
};

} // namespace

JoinResult ClusterSync::join()
{
    m_engine.enableCluster();
    m_engine.setClusterState(Core::ClusterState::Down, 1);
    m_engine.onClusterWork([s = m_state.get()] {
        {
            std::lock_guard lock(s->wakeMutex);
            s->wake = true;
        }
        s->wakeCv.notify_one();
    });
    const std::string where = "redis at " + m_options.url.redacted();
    const Outcome o = m_state->conn.connect();
    const Core::Millis now = m_clock.now();
    if (o.kind == Failure::Auth || o.kind == Failure::NotRedis || o.kind == Failure::Protocol)
        return {JoinResult::Kind::Refused, o.message};
    Session session(m_engine, m_options, m_clock, *m_state, m_clock.base());
    if (!o.ok()) {
        session.failed(o, now);
        return {JoinResult::Kind::CutOff, o.message + "; starting cut off from the cluster (when_cluster_down applies) and joining when it answers"};
    }
    if (!session.greet(now)) {
        std::lock_guard lock(m_state->statusMutex);
        return {JoinResult::Kind::CutOff, m_state->status.lastError + "; starting cut off from the cluster and joining when it answers"};
    }
    session.recovered();
    m_state->nextHeartbeat = now + HEARTBEAT_MS;
    const std::uint32_t n = m_engine.clusterNodes();
    return {JoinResult::Kind::Joined, "joined the cluster at " + m_options.url.redacted() + " as " + m_options.node + " (" + std::to_string(n)
                                          + (n == 1 ? " node" : " nodes") + " counting together); " + m_state->listsLine};
}

void ClusterSync::onRemoteListChange(std::function<void(const Core::ListChange&)> apply)
{
    m_state->applyRemote = std::move(apply);
}

void ClusterSync::publishListChange(const Core::ListChange& change)
{
    {
        std::lock_guard lock(m_state->listMutex);
        if (m_state->outgoing.size() >= MAX_PENDING_LIST_CHANGES) {
            m_state->outgoing.pop_front();  // a week-long outage of heavy editing: the oldest goes, counted
            ++m_state->droppedListChanges;
        }
        m_state->outgoing.push_back(change);
    }
    {
        std::lock_guard lock(m_state->wakeMutex);
        m_state->wake = true;
    }
    m_state->wakeCv.notify_one();
}

void ClusterSync::start()
{
    if (m_state->thread.joinable())
        return;
    m_state->stopping = false;
    m_state->thread = std::thread([this] { run(); });
}

void ClusterSync::stop()
{
    if (!m_state->thread.joinable())
        return;
    {
        std::lock_guard lock(m_state->wakeMutex);
        m_state->stopping = true;
    }
    m_state->wakeCv.notify_one();
    m_state->thread.join();
}

void ClusterSync::run()
{
    State& s = *m_state;
    Session session(m_engine, m_options, m_clock, s, m_clock.base());
    while (true) {
        {
            std::unique_lock lock(s.wakeMutex);
            s.wakeCv.wait_for(lock, std::chrono::milliseconds(TICK_MS), [&] { return s.wake || s.stopping; });
            if (s.stopping)
                return;
            s.wake = false;
        }
        const Core::Millis now = m_clock.now();
        if (!s.conn.isConnected() || s.breaker.state() == Breaker::State::Open) {
            if (!s.breaker.mayTry(now))
                continue;
            const Outcome o = s.conn.connect();
            if (!o.ok()) {
                session.failed(o, now);
                continue;
            }
            if (!session.greet(now))
                continue;
            session.recovered();
            s.nextHeartbeat = now + HEARTBEAT_MS;
            // Back from an outage: what was counted meanwhile goes to Redis.
            s.resync = true;
        }
        const bool moved = s.addressChanged.exchange(false);
        if (now >= s.nextHeartbeat || moved) {
            if (!session.heartbeat(now))
                continue;
            s.nextHeartbeat = now + HEARTBEAT_MS;
        }
        if (!session.sendListChanges(now) || !session.readListChanges(now))
            continue;
        const bool all = s.resync;
        s.resync = false;
        bool ok = true;
        for (int round = 0; ok && round < 64; ++round) {
            std::vector<Core::SyncReport> reports = m_engine.takeReports(m_clock.now(), BATCH, all);
            if (reports.empty())
                break;
            ok = session.send(reports, now);
            if (reports.size() < BATCH && !all)
                break;
        }
    }
}

ClusterStatus ClusterSync::status() const
{
    std::lock_guard lock(m_state->statusMutex);
    ClusterStatus st = m_state->status;
    const Core::Millis now = m_clock.now();
    if (st.breakerOpen)
        st.redis = ClusterStatus::Redis::Down;
    else if (st.roundTripMicros > SLOW_MICROS || now - m_state->lastErrorAt < ERROR_MEMORY_MS)
        st.redis = ClusterStatus::Redis::Degraded;
    else
        st.redis = ClusterStatus::Redis::Up;
    return st;
}

} // namespace Floodgate::Cluster
