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
constexpr const char* KEY_CHECK = "fg:key";      // the first node's ClusterKey::check(): every node must hold the same key
constexpr const char* ENTRY_PREFIX = "fg:e:";
constexpr const char* SHARED_PREFIX = "fg:s:";      // a shared collection's hash: key -> record (SharedRecord.h)
constexpr const char* CHANGE_STREAM = "fg:changes";  // every change to them, in order
constexpr const char* EXPIRY_PREFIX = "fg:x:";      // a shared collection's items that end: key by when (sorted set)
constexpr std::size_t CHANGES_PER_CALL = 256;      // shared changes per script call
constexpr Core::Millis LEDGER_PRUNE_MS = Core::MINUTE;  // how often tombstones past their keep leave the ledger
constexpr Core::Millis NOTICE_WINDOW_MS = Core::MINUTE; // at most NOTICES_PER_WINDOW lines of each kind per minute
constexpr int NOTICES_PER_WINDOW = 10;

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

std::string randomId()
{
    std::random_device rd;
    return hex64((std::uint64_t(rd()) << 32) ^ rd()) + hex64((std::uint64_t(rd()) << 32) ^ rd());
}

} // namespace

struct ClusterSync::State {
    State(const Options& o)
        : conn(o.url, o.connectTimeout, o.ioTimeout), report(std::string(Scripts::report)),
          put(std::string(Scripts::sharedPut)), prune(std::string(Scripts::sharedPrune)), breaker(PROBE_MS)
    {
    }
    RedisConnection conn;
    Script report;
    Script put;
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
    // The newest edit this node knows of each shared item (its own, or one
    // it took from the cluster), removals included, so an older edit read
    // later loses to it and a removal is known as one, not as an absence.
    // Under outgoingMutex (publish() writes it on any thread).
    struct Known {
        Stamp stamp;
        bool removed = false;
    };
    std::map<std::string, std::map<std::string, Known, std::less<>>, std::less<>> ledger;
    Known known(const std::string& collection, const std::string& key)
    {
        std::lock_guard lock(outgoingMutex);
        const auto c = ledger.find(collection);
        if (c == ledger.end())
            return {};
        const auto k = c->second.find(key);
        return k == c->second.end() ? Known{} : k->second;
    }
    // Records `change` as the newest edit of its item, unless a newer one is
    // known; false then.
    bool learn(const SharedChange& change)
    {
        std::lock_guard lock(outgoingMutex);
        Known& k = ledger[change.collection][change.key];
        if (k.stamp.known() && !newer(change.stamp, k.stamp))
            return false;
        k = Known{change.stamp, change.removed};
        return true;
    }
    Core::Millis nextLedgerPrune = 0;
    bool mergeNeeded = false;  // the sync thread's: level with the cluster at the next tick
    bool keyMismatch = false;  // the sync thread's: the last greet found another cluster key
    bool joinedOnce = false;   // the sync thread's: the breaker has closed at least once (the start-up line said the first)
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
    // Lines for the operator, at most NOTICES_PER_WINDOW of each kind a
    // minute; the rest are counted and mentioned with the next one said.
    struct NoticeRate {
        Core::Millis windowStart = 0;
        int said = 0;
        std::uint64_t unsaid = 0;
    };
    std::map<std::string, NoticeRate, std::less<>> noticeRates;  // under statusMutex
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

// One line for the operator, at most NOTICES_PER_WINDOW of a kind a minute.
void sayOnce(ClusterSync::State& s, const ClusterSync::Options& options, const Core::Clock& base, const std::string& kind, const std::string& line)
{
    if (!options.notice)
        return;
    std::uint64_t unsaid = 0;
    {
        std::lock_guard lock(s.statusMutex);
        ClusterSync::State::NoticeRate& rate = s.noticeRates[kind];
        const Core::Millis now = base.monotonic();
        if (now - rate.windowStart >= NOTICE_WINDOW_MS) {
            rate.windowStart = now;
            rate.said = 0;
        }
        if (rate.said >= NOTICES_PER_WINDOW) {
            ++rate.unsaid;
            return;
        }
        ++rate.said;
        unsaid = std::exchange(rate.unsaid, 0);
    }
    options.notice(unsaid == 0 ? line : line + " (and " + std::to_string(unsaid) + " more like it not said in the last minute)");
}

void refuseChange(ClusterSync::State& s, const ClusterSync::Options& options, const Core::Clock& base, const SharedChange& c, const std::string& why)
{
    // Who made it, as the audit trail would have named it ("cluster:NODE/WHO").
    const std::string by = !c.actor.empty() ? c.actor : c.stamp.node;
    const std::string line = "a change from the cluster (" + c.collection + " " + c.key + (by.empty() ? std::string() : ", by " + by)
                             + ") was not applied here: " + why;
    {
        std::lock_guard lock(s.statusMutex);
        ++s.status.refusedChanges;
        s.status.lastRefused = line;
    }
    sayOnce(s, options, base, "refused", line);
}

// Everything the sync thread does with one connection, in order; a failure
// anywhere opens the breaker and the engine decides cut off.
class Session {
public:
    Session(Core::Engine& engine, const ClusterSync::Options& options, ClusterClock& clock, ClusterSync::State& s, const Core::Clock& base)
        : m_engine(engine), m_options(options), m_clock(clock), m_s(s), m_base(base)
    {
    }

    // Connected and PONG: the epoch, the first heartbeat, what was changed
    // here meanwhile, then this node and the cluster are levelled.
    bool greet(Core::Millis now)
    {
        return sameKey(now) && heartbeat(now) && sendChanges(now) && syncShared(now);
    }

    // Every node of a cluster holds the same key: the first sets its check
    // value (which tells nothing of the key), a node with another key is
    // refused (it would take every record for a forgery, and its own
    // changes would be refused everywhere).
    bool sameKey(Core::Millis now)
    {
        const std::string mine = m_options.key.check();
        std::vector<Reply> r;
        if (!call({Command{"SET", KEY_CHECK, mine, "NX"}, Command{"GET", KEY_CHECK}}, r, now))
            return false;
        if (r[1].kind == Reply::Kind::String && r[1].text == mine)
            return true;
        const std::string theirs = r[1].kind == Reply::Kind::String ? r[1].text.substr(0, 8) : std::string("none");
        m_s.keyMismatch = true;
        return failed(Outcome{Failure::Auth, "redis at " + m_options.url.address() + ": this node's cluster key (" + m_options.key.fingerprint()
                                                 + ") is not the one the cluster's nodes hold (" + theirs
                                                 + "): give every node the same --cluster-key file"},
                      now);
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
                    // Redis lost what it held (a restart without its data,
                    // FLUSHALL): the counts go to it again, and the shared
                    // collections are levelled with it at the next tick, which
                    // gives it back what this node holds (docs/CLUSTER.md).
                    m_engine.resyncAll(m_clock.now());
                    m_s.resync = true;
                    m_s.mergeNeeded = true;
                    std::vector<Reply> ignored;
                    if (!call({Command{"SET", KEY_CHECK, m_options.key.check(), "NX"}}, ignored, now))
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
    // in order; false when Redis failed them (they stay queued). A change
    // that Redis holds a newer edit of is not stored; the levelling at the
    // next tick brings that edit here.
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
        Puts puts;
        const Core::Millis clusterNow = m_clock.now();
        for (const auto& [c, expiresAt] : batch) {
            // Ended while it waited (a cooldown made during an outage): every
            // node would drop it on arrival.
            if (expiresAt > 0 && expiresAt <= clusterNow)
                continue;
            addPut(puts, c, expiresAt);
        }
        std::vector<Reply> replies;
        if (!puts.argv.empty() && !call({putCommand(std::move(puts))}, replies, now)) {
            std::lock_guard lock(m_s.outgoingMutex);
            for (auto it = batch.rbegin(); it != batch.rend(); ++it)
                m_s.outgoing.push_front(std::move(*it));
            return false;
        }
        if (!replies.empty())
            for (const Reply& stored : replies[0].elements)
                if (stored.integer == 0)
                    m_s.mergeNeeded = true;
        return true;
    }

    // The changes other nodes made since this node last looked: each
    // verified (its tag), and applied unless this node knows a newer edit
    // of the item.
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
            std::string collection, key, record;
            for (std::size_t i = 0; i + 1 < f.size(); i += 2) {
                const std::string& k = f[i].text;
                if (k == "coll")
                    collection = f[i + 1].text;
                else if (k == "key")
                    key = f[i + 1].text;
                else if (k == "rec")
                    record = f[i + 1].text;
            }
            if (auto c = verified(collection, key, record, "the change stream")) {
                if (c->stamp.node != m_options.node && m_s.learn(*c))
                    m_s.sharing.apply(fromCluster(std::move(*c)));
            }
        }
        return true;
    }

    // Levelling this node and the cluster (when it joins, comes back, or
    // finds Redis emptied), item by item: the newer edit wins on both sides.
    // What only this node holds goes to the cluster (so an emptied Redis is
    // filled again from every node's state, their union); what only the
    // cluster holds is taken here; a removal is made here only as the
    // cluster's tombstone says, never because Redis holds less, and never
    // more than maxLevellingRemovals of a collection at once. An item this
    // node has no edit time for (it held it when it started) is the oldest:
    // the cluster's edit of it wins.
    bool syncShared(Core::Millis now)
    {
        m_s.mergeNeeded = false;
        const std::vector<std::string>& names = m_s.sharing.collections;
        if (names.empty())
            return true;
        // What has ended goes first, so nobody takes it. Where the stream is
        // before the hashes are read: a change made in between is read
        // twice, which makes the same change again (or is older: ignored).
        std::vector<Command> commands{pruneCommand(), Command{"XREVRANGE", CHANGE_STREAM, "+", "-", "COUNT", "1"}};
        for (const std::string& n : names)
            commands.push_back(Command{"HGETALL", SHARED_PREFIX + n});
        std::vector<Reply> r;
        if (!call(commands, r, now))
            return false;
        if (!r[1].elements.empty() && !r[1].elements[0].elements.empty())
            m_s.streamId = r[1].elements[0].elements[0].text;

        bool clusterEmpty = true;
        Puts puts;
        std::vector<SharedItems> mine(names.size()), sent(names.size()), taken(names.size()), removed(names.size());
        std::vector<std::vector<SharedChange>> removals(names.size());
        std::string refusedLine;
        for (std::size_t i = 0; i < names.size(); ++i) {
            const std::string& name = names[i];
            mine[i] = m_s.sharing.read(name);
            const Reply& hash = r[2 + i];
            std::map<std::string, SharedChange> theirs;
            std::set<std::string> forged;  // records no node of this cluster wrote
            for (std::size_t j = 0; j + 1 < hash.elements.size(); j += 2) {
                clusterEmpty = false;
                const std::string& key = hash.elements[j].text;
                if (auto c = verified(name, key, hash.elements[j + 1].text, "the cluster's " + name))
                    theirs.emplace(key, std::move(*c));
                else if (forged.insert(key).second)
                    unreadable(puts, i, key, hash.elements[j + 1].text, mine[i]);
            }
            for (auto& [key, c] : theirs) {
                const auto have = mine[i].find(key);
                const ClusterSync::State::Known local = m_s.known(name, key);
                if (local.stamp.known() && newer(local.stamp, c.stamp)) {
                    // This node's edit is the newer: the cluster gets it.
                    if (have != mine[i].end() || local.removed)
                        sendMine(puts, i, key, have == mine[i].end() ? nullptr : &have->second, local.stamp, sent);
                    continue;
                }
                m_s.learn(c);
                if (c.removed) {
                    if (have != mine[i].end())
                        removals[i].push_back(fromCluster(std::move(c)));
                } else if (have == mine[i].end() || have->second != c.value) {
                    taken[i].emplace(key, c.value);
                    m_s.sharing.apply(fromCluster(std::move(c)));
                }
            }
            for (const auto& [key, value] : mine[i])
                if (!theirs.count(key) && !forged.count(key))
                    sendMine(puts, i, key, &value, m_s.known(name, key).stamp, sent);
            if (removals[i].size() > ClusterSync::maxLevellingRemovals) {
                refusedLine += (refusedLine.empty() ? "" : "; ") + std::to_string(removals[i].size()) + " " + name;
                removals[i].clear();
            }
        }
        // Removals in the reverse order (a customer goes before its tier).
        for (std::size_t i = names.size(); i-- > 0;)
            for (SharedChange& c : removals[i]) {
                removed[i].emplace(c.key, std::string());
                m_s.sharing.apply(std::move(c));
            }
        if (!refusedLine.empty()) {
            const std::string line = "levelling with the cluster would have removed " + refusedLine + " that this node holds (more than "
                                     + std::to_string(ClusterSync::maxLevellingRemovals)
                                     + " of a collection at once); none was removed: check the lists on the other nodes, then remove what must go by hand";
            {
                std::lock_guard lock(m_s.statusMutex);
                m_s.status.levellingRefused = line;
            }
            notice("levelling", line);
        }
        std::vector<Reply> stored;
        while (!puts.argv.empty()) {
            Puts part = puts.take(CHANGES_PER_CALL);
            if (!call({putCommand(std::move(part))}, stored, now))
                return false;
            for (const Reply& one : stored[0].elements)
                if (one.integer == 0)
                    m_s.mergeNeeded = true;  // a newer edit arrived meanwhile: level again
        }
        if (clusterEmpty)
            m_s.sharedLine = "seeded the cluster with this node's " + summary(mine);
        else
            m_s.sharedLine = "took the cluster's state (" + summary(taken) + " added or changed here, " + summary(removed) + " removed; "
                             + summary(sent) + " sent that the cluster lacked or held older)";
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
            else if (r.kind != Reply::Kind::Array || r.elements.size() < reports.size())
                problem = Outcome{Failure::Protocol, "redis at " + m_options.url.address() + ": the report script answered something unexpected"};
            else {
                for (std::size_t i = 0; i < reports.size(); ++i)
                    if (auto a = decodeAck(r.elements[i].text, reports[i]))
                        acks[i] = std::move(*a);
                for (std::size_t i = reports.size(); i < r.elements.size(); ++i)
                    malformed(r.elements[i].text);
            }
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

    // "<key> <field>": a field the report script removed from an entry's
    // hash, which no node wrote.
    void malformed(const std::string& keyAndField)
    {
        const auto space = keyAndField.find(' ');
        const std::string line = "removed the field \"" + keyAndField.substr(space == std::string::npos ? keyAndField.size() : space + 1) + "\" from "
                                 + keyAndField.substr(0, space) + " in Redis: it was not a node's counts (something else writes into this Redis)";
        {
            std::lock_guard lock(m_s.statusMutex);
            ++m_s.status.malformedFields;
            m_s.status.lastMalformed = line;
        }
        notice("malformed", line);
    }

    bool failed(const Outcome& o, Core::Millis now)
    {
        m_s.conn.close();
        m_s.breaker.failure(now);
        m_engine.setClusterState(Core::ClusterState::Down, m_engine.clusterNodes());
        bool opened = false;
        {
            std::lock_guard lock(m_s.statusMutex);
            m_s.lastErrorAt = now;
            ++m_s.status.errors;
            m_s.status.lastError = o.message;
            opened = !m_s.status.breakerOpen;
            m_s.status.breakerOpen = true;
            m_s.status.breakerOpened = m_s.breaker.opened();
        }
        // One line when it opens (not one per probe), for the journal.
        if (opened)
            notice("breaker", o.message + "; deciding on this node alone until Redis answers (" + whenDown() + ")");
        return false;
    }

    // The breaker closes: Redis answered every step of greet().
    void recovered()
    {
        m_s.breaker.success();
        bool wasOpen = false;
        {
            std::lock_guard lock(m_s.statusMutex);
            wasOpen = m_s.status.breakerOpen && m_s.status.breakerOpened > 0;
            m_s.status.breakerOpen = false;
        }
        if (wasOpen && m_s.joinedOnce)
            notice("breaker", "redis at " + m_options.url.address() + " answers again: counting with the cluster (" + std::to_string(m_engine.clusterNodes())
                                  + (m_engine.clusterNodes() == 1 ? " node" : " nodes") + ")");
        m_s.joinedOnce = true;
    }

    // What a node enforces while cut off (settings.when_cluster_down).
    std::string whenDown() const
    {
        const auto config = m_engine.config();
        switch (config ? config->settings.whenClusterDown : Core::WhenClusterDown::Local) {
        case Core::WhenClusterDown::Open: return "when_cluster_down = open: the whole of every limit, counted here";
        case Core::WhenClusterDown::Closed: return "when_cluster_down = closed: every counted request refused";
        case Core::WhenClusterDown::Local: break;
        }
        return "when_cluster_down = local: this node's share of every limit";
    }

private:
    // Shared changes for one call of the put script (Scripts::sharedPut).
    struct Puts {
        std::vector<std::string> argv;
        Puts take(std::size_t changes)
        {
            Puts part;
            const std::size_t n = std::min(argv.size(), changes * 7);
            part.argv.assign(std::make_move_iterator(argv.begin()), std::make_move_iterator(argv.begin() + std::ptrdiff_t(n)));
            argv.erase(argv.begin(), argv.begin() + std::ptrdiff_t(n));
            return part;
        }
    };

    std::size_t indexOf(const std::string& collection) const
    {
        const auto& names = m_s.sharing.collections;
        return std::size_t(std::find(names.begin(), names.end(), collection) - names.begin());
    }

    // `expiresAt`: when a put's item ends (0: never); a removal's tombstone
    // stays tombstoneKeepMs.
    void addPut(Puts& puts, const SharedChange& c, Core::Millis expiresAt, const std::string& unreadable = {})
    {
        const std::size_t i = indexOf(c.collection);
        if (i >= m_s.sharing.collections.size())
            return;
        const Core::Millis forgetAt = c.removed ? std::max(c.stamp.at, m_clock.now()) + ClusterSync::tombstoneKeepMs : expiresAt;
        puts.argv.insert(puts.argv.end(), {std::to_string(2 + 2 * i), c.collection, c.key, encodeRecord(c, m_options.key),
                                           std::to_string(forgetAt), std::to_string(c.stamp.at), unreadable});
    }

    Command putCommand(Puts puts) const
    {
        std::vector<std::string> keys{CHANGE_STREAM};
        for (const std::string& n : m_s.sharing.collections) {
            keys.push_back(SHARED_PREFIX + n);
            keys.push_back(EXPIRY_PREFIX + n);
        }
        return Command::eval(m_s.put, std::move(keys), std::move(puts.argv));
    }

    // What this node holds of an item (nullptr: its removal), for the cluster.
    void sendMine(Puts& puts, std::size_t i, const std::string& key, const std::string* value, const Stamp& stamp, std::vector<SharedItems>& sent)
    {
        const std::string& name = m_s.sharing.collections[i];
        SharedChange c = value ? SharedChange::put(name, key, *value, "floodgate") : SharedChange::removal(name, key, "floodgate");
        c.stamp = Stamp{stamp.at, m_options.node};
        addPut(puts, c, value ? m_s.expiresAt(name, *value) : 0);
        sent[i].emplace(key, c.value);
    }

    // A record in a collection's hash that no node of this cluster wrote:
    // refused, and replaced by this node's item if it holds one (the put
    // script replaces exactly that text, whatever stamp it claims).
    void unreadable(Puts& puts, std::size_t i, const std::string& key, const std::string& text, const SharedItems& held)
    {
        const std::string& name = m_s.sharing.collections[i];
        const auto have = held.find(key);
        const ClusterSync::State::Known local = m_s.known(name, key);
        if (have != held.end() || (local.removed && local.stamp.known())) {
            SharedChange c = have != held.end() ? SharedChange::put(name, key, have->second, "floodgate") : SharedChange::removal(name, key, "floodgate");
            c.stamp = Stamp{local.stamp.at, m_options.node};
            addPut(puts, c, have != held.end() ? m_s.expiresAt(name, have->second) : 0, text);
        }
    }

    // A record read from Redis, its tag verified; nullopt (refused,
    // counted and said) when it is not one of this cluster's.
    std::optional<SharedChange> verified(const std::string& collection, const std::string& key, const std::string& record, const std::string& where)
    {
        std::string why;
        if (!shares(collection)) {
            refuse(SharedChange::put(collection, key, {}, {}), "not a collection the nodes share (from " + where + ")");
            return std::nullopt;
        }
        auto c = decodeRecord(collection, key, record, m_options.key, &why);
        if (!c)
            refuse(SharedChange::put(collection, key, {}, {}), why + " (from " + where + ")");
        return c;
    }

    // As the audit trail names another node's change.
    static SharedChange fromCluster(SharedChange c)
    {
        c.actor = "cluster:" + c.stamp.node + (c.actor.empty() ? "" : "/" + c.actor);
        c.origin = Origin::Cluster;
        return c;
    }

    void refuse(const SharedChange& c, const std::string& why) { refuseChange(m_s, m_options, m_base, c, why); }
    void notice(const std::string& kind, const std::string& line) { sayOnce(m_s, m_options, m_base, kind, line); }

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

    bool shares(const std::string& collection) const
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
    // The hash key that names customers and header values in Redis comes
    // from the cluster key: the same on every node, and not in Redis.
    Core::adoptSipKey(m_options.key.sipKey());
    // They are hashed when a configuration is compiled: compile again.
    if (auto cfg = m_engine.config())
        m_engine.setConfig(*cfg);
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
        if (m_state->keyMismatch)
            return {JoinResult::Kind::Refused, m_state->status.lastError};
        return {JoinResult::Kind::CutOff, m_state->status.lastError + "; starting cut off from the cluster and joining when it answers"};
    }
    session.recovered();
    m_state->nextHeartbeat = now + HEARTBEAT_MS;
    const std::uint32_t n = m_engine.clusterNodes();
    return {JoinResult::Kind::Joined, "joined the cluster at " + m_options.url.redacted() + " as " + m_options.node + " (" + std::to_string(n)
                                          + (n == 1 ? " node" : " nodes") + " counting together, cluster key " + m_options.key.fingerprint()
                                          + "); " + m_state->sharedLine};
}

void ClusterSync::refuse(const SharedChange& change, const std::string& why)
{
    refuseChange(*m_state, m_options, m_clock.base(), change, why);
}

void ClusterSync::share(Sharing sharing)
{
    m_state->sharing = std::move(sharing);
}

void ClusterSync::publish(SharedChange change)
{
    const Core::Millis expiresAt = change.removed ? 0 : m_state->expiresAt(change.collection, change.value);
    change.stamp = Stamp{m_clock.now(), m_options.node};
    change.origin = Origin::Here;
    {
        std::lock_guard lock(m_state->outgoingMutex);
        m_state->ledger[change.collection][change.key] = State::Known{change.stamp, change.removed};
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
        if (!session.sendChanges(now) || !session.readChanges(now) || (s.mergeNeeded && !session.syncShared(now)))
            continue;
        if (now >= s.nextLedgerPrune) {
            s.nextLedgerPrune = now + LEDGER_PRUNE_MS;
            std::lock_guard lock(s.outgoingMutex);
            for (auto& [collection, items] : s.ledger)
                std::erase_if(items, [&](const auto& item) { return item.second.removed && item.second.stamp.at + tombstoneKeepMs < now; });
        }
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
