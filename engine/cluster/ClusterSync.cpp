// SPDX-License-Identifier: GPL-3.0-or-later
#include "cluster/ClusterSync.h"

#include "cluster/RedisConnection.h"
#include "cluster/Scripts.h"
#include "cluster/SyncProtocol.h"
#include "core/Engine.h"
#include "core/Hash.h"
#include "core/Tuning.h"

#include <charconv>
#include <algorithm>
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
constexpr const char* SHARED_PREFIX = "fg:s:";      // a shared collection's hash: key -> value
constexpr const char* CHANGE_STREAM = "fg:changes";  // every change to them, in order
constexpr const char* SEEDED_KEY = "fg:seeded";      // the cluster holds them (possibly empty)
constexpr const char* EXPIRY_PREFIX = "fg:x:";      // a shared collection's items that end: key by when (sorted set)
constexpr std::size_t CHANGES_PER_CALL = 256;

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
          change(std::string(Scripts::sharedChange)), seed(std::string(Scripts::sharedSeed)), prune(std::string(Scripts::sharedPrune)),
          breaker(PROBE_MS)
    {
    }
    RedisConnection conn;
    Script report;
    Script change;
    Script seed;
    Script prune;
    // What the nodes share: changes made here, waiting to be sent; where
    // this node is in the change stream.
    Sharing sharing;
    struct Pending {
        SharedChange change;
        Core::Millis expiresAt = 0;  // Sharing::expiresAt of a put; 0: never ends
    };
    std::mutex outgoingMutex;
    std::deque<Pending> outgoing;
    std::uint64_t droppedChanges = 0;  // under outgoingMutex
    Core::Millis expiresAt(const std::string& collection, const std::string& value) const
    {
        return sharing.expiresAt ? sharing.expiresAt(collection, value) : 0;
    }
    std::string streamId = "0-0";
    std::string sharedLine;  // what join() found (for its start-up line)
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
    // The sync thread goes round at once instead of at its next tick.
    void wakeUp()
    {
        {
            std::lock_guard lock(wakeMutex);
            wake = true;
        }
        wakeCv.notify_one();
    }

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
    m_state->wakeUp();
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
        // What was changed here while cut off goes first, then this node is
        // brought level with the cluster.
        return heartbeat(now) && sendChanges(now) && syncShared(now);
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
    bool sendChanges(Core::Millis now)
    {
        std::vector<ClusterSync::State::Pending> batch;
        {
            std::lock_guard lock(m_s.outgoingMutex);
            while (!m_s.outgoing.empty() && batch.size() < CHANGES_PER_CALL) {
                batch.push_back(std::move(m_s.outgoing.front()));
                m_s.outgoing.pop_front();
            }
        }
        if (batch.empty())
            return true;
        std::vector<Command> commands;
        const Core::Millis clusterNow = m_clock.now();
        for (const auto& [c, expiresAt] : batch) {
            // Ended while it waited (a cooldown made during an outage): every
            // node would drop it on arrival.
            if (expiresAt > 0 && expiresAt <= clusterNow)
                continue;
            commands.push_back(Command::eval(m_s.change, {SHARED_PREFIX + c.collection, CHANGE_STREAM, SEEDED_KEY, EXPIRY_PREFIX + c.collection},
                                             {m_options.node, c.removed ? "del" : "put", c.collection, c.key, c.removed ? std::string() : c.value, c.actor,
                                              std::to_string(expiresAt)}));
        }
        if (commands.empty())
            return true;
        std::vector<Reply> replies;
        if (!call(commands, replies, now)) {
            std::lock_guard lock(m_s.outgoingMutex);
            for (auto it = batch.rbegin(); it != batch.rend(); ++it)
                m_s.outgoing.push_front(std::move(*it));
            return false;
        }
        return true;
    }

    // The changes other nodes made since this node last looked.
    bool readChanges(Core::Millis now)
    {
        std::vector<Reply> r;
        if (!call({Command{"XREAD", "COUNT", "512", "STREAMS", CHANGE_STREAM, m_s.streamId}}, r, now))
            return false;
        // [[stream, [[id, [field, value, ...]], ...]]], or nil when nothing is new.
        if (r[0].kind != Reply::Kind::Array || r[0].elements.empty() || r[0].elements[0].elements.size() != 2)
            return true;
        for (const Reply& item : r[0].elements[0].elements[1].elements) {
            if (item.elements.size() != 2)
                continue;
            m_s.streamId = item.elements[0].text;
            const std::vector<Reply>& f = item.elements[1].elements;
            std::string node, op;
            SharedChange c;
            for (std::size_t i = 0; i + 1 < f.size(); i += 2) {
                const std::string& k = f[i].text;
                std::string v = f[i + 1].text;
                if (k == "node")
                    node = std::move(v);
                else if (k == "op")
                    op = std::move(v);
                else if (k == "coll")
                    c.collection = std::move(v);
                else if (k == "key")
                    c.key = std::move(v);
                else if (k == "value")
                    c.value = std::move(v);
                else if (k == "actor")
                    c.actor = std::move(v);
            }
            if (node == m_options.node || !known(c.collection))
                continue;
            c.removed = op == "del";
            c.actor = "cluster:" + node + (c.actor.empty() ? "" : "/" + c.actor);
            m_s.sharing.apply(c);
        }
        return true;
    }

    // Joining (or back from an outage): the first node seeds the cluster
    // with what it holds; any other takes the cluster's, so every node holds
    // the same.
    bool syncShared(Core::Millis now)
    {
        const std::vector<std::string>& names = m_s.sharing.collections;
        if (names.empty())
            return true;
        std::vector<SharedItems> mine;
        std::vector<std::string> seed;
        std::vector<std::string> keys{SEEDED_KEY};
        for (std::size_t i = 0; i < names.size(); ++i) {
            keys.push_back(SHARED_PREFIX + names[i]);
            keys.push_back(EXPIRY_PREFIX + names[i]);
            mine.push_back(m_s.sharing.read(names[i]));
            for (const auto& [k, v] : mine.back()) {
                seed.push_back(std::to_string(2 * i + 2));
                seed.push_back(k);
                seed.push_back(v);
                seed.push_back(std::to_string(m_s.expiresAt(names[i], v)));
            }
        }
        // What has ended goes first, so nobody takes it. Where the stream is
        // before the hashes are read: a change made in between is read
        // twice, which makes the same change again.
        std::vector<Command> commands{pruneCommand(), Command{"XREVRANGE", CHANGE_STREAM, "+", "-", "COUNT", "1"},
                                      Command::eval(m_s.seed, keys, seed)};
        for (const std::string& n : names)
            commands.push_back(Command{"HGETALL", SHARED_PREFIX + n});
        std::vector<Reply> r;
        if (!call(commands, r, now))
            return false;
        r.erase(r.begin());  // the prune's count
        if (!r[0].elements.empty() && !r[0].elements[0].elements.empty())
            m_s.streamId = r[0].elements[0].elements[0].text;
        if (r[1].integer == 1) {
            m_s.sharedLine = "seeded the cluster with this node's " + summary(mine);
            return true;
        }
        // Puts in the collections' order, removals in the reverse order (a
        // customer goes before its tier).
        std::vector<SharedItems> taken(names.size());
        std::vector<SharedItems> removed(names.size());
        for (std::size_t i = 0; i < names.size(); ++i) {
            const Reply& hash = r[2 + i];
            SharedItems theirs;
            for (std::size_t j = 0; j + 1 < hash.elements.size(); j += 2)
                theirs.emplace(hash.elements[j].text, hash.elements[j + 1].text);
            for (const auto& [k, v] : theirs) {
                const auto have = mine[i].find(k);
                if (have == mine[i].end() || have->second != v) {
                    m_s.sharing.apply(SharedChange{names[i], k, v, false, "cluster:snapshot"});
                    taken[i].emplace(k, v);
                }
            }
            for (const auto& [k, v] : mine[i])
                if (!theirs.count(k))
                    removed[i].emplace(k, v);
        }
        for (std::size_t i = names.size(); i-- > 0;)
            for (const auto& [k, v] : removed[i])
                m_s.sharing.apply(SharedChange{names[i], k, {}, true, "cluster:snapshot"});
        m_s.sharedLine = "took the cluster's state (" + summary(taken) + " added or changed here, " + summary(removed) + " removed)";
        return true;
    }

    // Items that ended by themselves leave the collections' hashes (once a
    // heartbeat, and before a node takes the cluster's state).
    bool pruneEnded(Core::Millis now)
    {
        if (m_s.sharing.collections.empty())
            return true;
        std::vector<Reply> ignored;
        return call({pruneCommand()}, ignored, now);
    }

    // One batch of reports; false when Redis failed it (the breaker is open then).
    bool send(std::vector<Core::SyncReport>& reports, Core::Millis now)
    {
        std::vector<std::string> keys;
        std::vector<std::string> args{m_options.node, std::to_string(m_engine.clusterNodes()), std::to_string(Core::Tuning::clusterLeaseMs),
                                      std::to_string(Core::Tuning::clusterQuietReportMs + Core::Tuning::clusterQuietSpreadMs)};
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
    Command pruneCommand() const
    {
        std::vector<std::string> keys;
        for (const std::string& n : m_s.sharing.collections) {
            keys.push_back(SHARED_PREFIX + n);
            keys.push_back(EXPIRY_PREFIX + n);
        }
        return Command::eval(m_s.prune, std::move(keys), {});
    }

    bool known(const std::string& collection) const
    {
        const auto& names = m_s.sharing.collections;
        return std::find(names.begin(), names.end(), collection) != names.end();
    }

    // "3 blocklist, 2 tiers" (the collections with items), or "nothing".
    std::string summary(const std::vector<SharedItems>& per) const
    {
        std::string out;
        for (std::size_t i = 0; i < per.size(); ++i)
            if (!per[i].empty())
                out += (out.empty() ? "" : ", ") + std::to_string(per[i].size()) + " " + m_s.sharing.collections[i];
        return out.empty() ? "nothing" : out;
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
    m_engine.onClusterWork([s = m_state.get()] { s->wakeUp(); });
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
                                          + (n == 1 ? " node" : " nodes") + " counting together); " + m_state->sharedLine};
}

void ClusterSync::share(Sharing sharing)
{
    m_state->sharing = std::move(sharing);
}

void ClusterSync::publish(SharedChange change)
{
    const Core::Millis expiresAt = change.removed ? 0 : m_state->expiresAt(change.collection, change.value);
    {
        std::lock_guard lock(m_state->outgoingMutex);
        auto& q = m_state->outgoing;
        if (q.size() >= maxPendingChanges) {
            // A long outage: what has ended by itself (cooldowns, bans) is
            // worth nothing to the others; only then the oldest goes, counted.
            const Core::Millis now = m_clock.now();
            std::erase_if(q, [now](const State::Pending& p) { return p.expiresAt > 0 && p.expiresAt <= now; });
            if (q.size() >= maxPendingChanges) {
                q.pop_front();
                ++m_state->droppedChanges;
            }
        }
        q.push_back(State::Pending{std::move(change), expiresAt});
    }
    m_state->wakeUp();
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
            if (!session.heartbeat(now) || !session.pruneEnded(now))
                continue;
            s.nextHeartbeat = now + HEARTBEAT_MS;
        }
        if (!session.sendChanges(now) || !session.readChanges(now))
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
    std::uint64_t dropped = 0;
    {
        std::lock_guard lock(m_state->outgoingMutex);
        dropped = m_state->droppedChanges;
    }
    std::lock_guard lock(m_state->statusMutex);
    ClusterStatus st = m_state->status;
    st.droppedChanges = dropped;
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
