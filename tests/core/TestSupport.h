// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers shared by the engine suites: addresses from text, requests built
// field by field, readable names for the engine's enums, COMPARE_ACTION and
// the binding rule of a decision, FNV-1a collisions of the engine's old key
// hash, and one key's window cells driven the way the engine drives them
// (two layouts of one level compared over random requests).
//
// Why the names: QCOMPARE(d.action, Action::Throttle) would find
// Floodgate::Core::toString(Action) by argument-dependent lookup; it returns a
// static string that QtTest would delete[] when the comparison fails. So the
// suites compare label(d.action) with label(Action::Throttle) instead, which
// also prints "Action::Throttle" rather than "1" on a failure.
#pragma once

#include "core/CustomerKey.h"
#include "core/Engine.h"
#include "core/SettingTable.h"

// Key below drives a level's cells the way the engine does.
#include "core/Window.h"

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>
#include <QTest>
#include <QtGlobal>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace Floodgate::Core::Test {

using Core::DAY;
using Core::HOUR;
using Core::MINUTE;
using Core::SECOND;

// A whole hour of wall-clock time (2026-09-21): every default bucket width
// (3 s, 30 s, 3 min, 6 s, 6 min) divides it, so bucket arithmetic stays exact.
inline constexpr Millis T0 = 1'789'999'200'000;

inline QString qs(std::string_view s)
{
    return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

inline IpAddress ip(std::string_view text)
{
    std::string why;
    const auto a = IpAddress::parse(text, &why);
    if (!a)
        qFatal("test address \"%s\" does not parse: %s", std::string(text).c_str(), why.c_str());
    return *a;
}

inline Cidr cidr(std::string_view text)
{
    std::string why;
    const auto c = Cidr::parse(text, &why);
    if (!c)
        qFatal("test range \"%s\" does not parse: %s", std::string(text).c_str(), why.c_str());
    return *c;
}

inline Level level(std::uint32_t limit, Millis periodMs, Algorithm algorithm = Algorithm::SlidingWindow)
{
    Level l;
    l.limit = limit;
    l.periodMs = periodMs;
    l.algorithm = algorithm;
    return l;
}

// defaultConfig() with every row of the setting table (SettingTable.h) set
// to a valid value other than its default (a duration with a fraction of a
// second): what a round trip through JSON or the database must keep.
inline EngineConfig everySettingChanged()
{
    EngineConfig c = defaultConfig();
    for (const SettingRow& row : settingTable()) {
        const SettingAccess& a = row.access;
        const std::int64_t was = row.kind == SettingKind::Text || row.kind == SettingKind::Ranges ? 0 : a.number(c);
        switch (row.kind) {
        case SettingKind::Integer:
        case SettingKind::Choice:
            if (!row.choices.empty())
                a.setNumber(c, row.choices[0].value != was ? row.choices[0].value : row.choices[1].value);
            else
                a.setNumber(c, was < row.max ? was + 1 : was - 1);
            break;
        case SettingKind::Flag: a.setNumber(c, !was); break;
        case SettingKind::Duration: a.setNumber(c, was + 1500); break;
        case SettingKind::Text: a.setText(c, a.text(c) + "-2"); break;
        case SettingKind::Ranges: a.setRanges(c, {cidr("10.0.0.0/8"), cidr("2001:db8::/32")}); break;
        }
    }
    return c;
}

inline ListEntry listEntry(std::string_view range, std::string reason = {}, Millis expiresAt = NeverExpires,
                           ListSource source = ListSource::Operator)
{
    ListEntry e;
    e.range = cidr(range);
    e.reason = std::move(reason);
    e.expiresAt = expiresAt;
    e.source = source;
    return e;
}

inline std::shared_ptr<const AddressList> makeList(std::vector<ListEntry> entries)
{
    return std::make_shared<const AddressList>(std::move(entries));
}

// A rule counted by the value of the X-Api-Key header.
inline ThrottleRule apiKeyRule(std::string name, std::vector<Level> levels)
{
    ThrottleRule r;
    r.name = std::move(name);
    r.discriminator = Discriminator::Header;
    r.header = "X-Api-Key";
    r.levels = std::move(levels);
    return r;
}

inline ThrottleRule apiKeyRule(std::string name, Level level)
{
    return apiKeyRule(std::move(name), std::vector<Level>{level});
}

// ---- enum labels (independent of the engine's own toString) -------------

inline QByteArray label(Action a)
{
    switch (a) {
    case Action::Allow: return "Action::Allow";
    case Action::Throttle: return "Action::Throttle";
    case Action::Block: return "Action::Block";
    case Action::DryRun: return "Action::DryRun";
    }
    return "Action::?" + QByteArray::number(int(a));
}

inline QByteArray label(Reason r)
{
    switch (r) {
    case Reason::Counted: return "Reason::Counted";
    case Reason::OverLimit: return "Reason::OverLimit";
    case Reason::Cooldown: return "Reason::Cooldown";
    case Reason::Blocklisted: return "Reason::Blocklisted";
    case Reason::AutoBanned: return "Reason::AutoBanned";
    case Reason::Safelisted: return "Reason::Safelisted";
    case Reason::ExcludedPath: return "Reason::ExcludedPath";
    case Reason::SafeUserAgent: return "Reason::SafeUserAgent";
    case Reason::HasCookies: return "Reason::HasCookies";
    case Reason::RangeContinuation: return "Reason::RangeContinuation";
    case Reason::ClusterDown: return "Reason::ClusterDown";
    }
    return "Reason::?" + QByteArray::number(int(r));
}

inline QByteArray label(ClientState s)
{
    switch (s) {
    case ClientState::Ok: return "ClientState::Ok";
    case ClientState::Throttled: return "ClientState::Throttled";
    case ClientState::Blocked: return "ClientState::Blocked";
    case ClientState::Safelisted: return "ClientState::Safelisted";
    }
    return "ClientState::?" + QByteArray::number(int(s));
}

inline QByteArray label(ListKind k)
{
    return k == ListKind::Safelist ? "ListKind::Safelist" : "ListKind::Blocklist";
}

inline QByteArray label(ListSource s)
{
    switch (s) {
    case ListSource::Operator: return "ListSource::Operator";
    case ListSource::Automatic: return "ListSource::Automatic";
    case ListSource::Import: return "ListSource::Import";
    }
    return "ListSource::?" + QByteArray::number(int(s));
}

inline QByteArray label(Algorithm a)
{
    switch (a) {
    case Algorithm::SlidingWindow: return "Algorithm::SlidingWindow";
    case Algorithm::FixedWindow: return "Algorithm::FixedWindow";
    case Algorithm::Lockout: return "Algorithm::Lockout";
    }
    return "Algorithm::?" + QByteArray::number(int(a));
}

// ---- requests ------------------------------------------------------------

// What a listener would pass, built field by field:
//   decide(engine, Request().from("10.0.0.1").to("POST", "/comments").header("X-User-Id", "u1"), t)
struct Request {
    std::string client = "203.0.113.7";
    std::string method = "GET";
    std::string path = "/";
    std::string query;
    std::string userAgent = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
    std::uint32_t cookies = 0;
    std::string customerId;
    std::vector<std::pair<std::string, std::string>> headers;
    bool viaTrustedProxy = false;

    Request& from(std::string address)
    {
        client = std::move(address);
        return *this;
    }
    Request& to(std::string m, std::string p)
    {
        method = std::move(m);
        path = std::move(p);
        return *this;
    }
    Request& at(std::string p)
    {
        path = std::move(p);
        return *this;
    }
    Request& withQuery(std::string q)
    {
        query = std::move(q);
        return *this;
    }
    Request& agent(std::string ua)
    {
        userAgent = std::move(ua);
        return *this;
    }
    Request& withCookies(std::uint32_t n)
    {
        cookies = n;
        return *this;
    }
    Request& customer(std::string id)
    {
        customerId = std::move(id);
        return *this;
    }
    Request& header(std::string name, std::string value)
    {
        headers.emplace_back(std::move(name), std::move(value));
        return *this;
    }
    // The peer is a trusted proxy (its customer header is believed).
    Request& trusted()
    {
        viaTrustedProxy = true;
        return *this;
    }
};

// A customer's API key made of its id (the same on every run), and the key
// as the customer sends it.
inline NewCustomerKey testKey(const std::string& customer, Millis createdAt = 0)
{
    return customerKeyFrom(keyDigest("test key of " + customer), createdAt);
}

// RequestFacts point into the request and into the header list: this keeps
// its own copy of both alive for as long as the facts are used (so
// `Facts f(Request().from(...))` is safe: the temporary may go).
class Facts {
public:
    explicit Facts(Request request) : m_request(std::move(request))
    {
        const Request& r = m_request;
        for (const auto& [name, value] : r.headers)
            m_fields.push_back({name, value});
        m_facts.peer = ip(r.client);
        m_facts.client = m_facts.peer;
        m_facts.method = r.method;
        m_facts.path = r.path;
        m_facts.query = r.query;
        m_facts.userAgent = r.userAgent;
        m_facts.cookieCount = r.cookies;
        m_facts.customerId = r.customerId;
        m_facts.fromTrustedProxy = r.viaTrustedProxy;
        m_facts.headers = m_fields;
    }
    Facts(const Facts&) = delete;
    Facts& operator=(const Facts&) = delete;

    const RequestFacts& get() const { return m_facts; }

private:
    Request m_request;
    std::vector<HeaderField> m_fields;
    RequestFacts m_facts;
};

inline Decision decide(Engine& engine, const Request& r, Millis now)
{
    const Facts f(r);
    return engine.decide(f.get(), now);
}

inline void reportSuccess(Engine& engine, const Request& r, Millis now)
{
    const Facts f(r);
    engine.reportSuccess(f.get(), now);
}

// A one-line description of a decision for QVERIFY2 messages.
inline QByteArray describe(const Decision& d)
{
    return label(d.action) + " wouldBe=" + label(d.wouldBe) + " " + label(d.reason) + " rule="
        + QByteArray(d.rule.text, d.rule.length) + " limit=" + QByteArray::number(d.limit)
        + " count=" + QByteArray::number(d.count) + " remaining=" + QByteArray::number(d.remaining)
        + " retryAfterMs=" + QByteArray::number(qint64(d.retryAfterMs)) + " resetMs="
        + QByteArray::number(qint64(d.resetMs));
}


// The name of the level (or list) that decided.
inline QByteArray ruleOf(const Decision& d)
{
    return QByteArray(d.rule.text, d.rule.length);
}

// The names of a client's levels, in the order the engine lists them.
inline QStringList levelNames(const ClientDetail& detail)
{
    QStringList out;
    for (const LevelUsage& u : detail.levels)
        out << qs(u.name);
    return out;
}

// ---- FNV-1a collisions -------------------------------------------------------
// How the engine used to key header values (salt 6) and cooldown users
// (salt 3): FNV-1a 64 from the offset basis xor the salt, the process seed
// mixed in only after the loop, so two strings whose loop states collide
// shared one counter whatever the seed.
inline constexpr std::uint64_t FNV_PRIME = 0x100000001b3ULL;

inline std::uint64_t oldFnvState(std::string_view s, std::uint64_t salt)
{
    std::uint64_t h = 0xcbf29ce484222325ULL ^ salt;
    for (unsigned char c : s) {
        h ^= c;
        h *= FNV_PRIME;
    }
    return h;
}

// Two different 32-byte strings with the same FNV-1a state from `salt`.
//
// XOR with a byte changes only the state's low byte, so after it the state
// is y + e for a small integer e (-255..255) the byte can choose given y's
// low byte. For two strings, the difference of their states after the last
// byte is then sum_i d_i * P^(31-i) mod 2^64 with d_i = e_i - e'_i: a
// collision is a choice of small d_i whose weighted sum is 0 mod 2^64.
// Wagner's generalised birthday algorithm ("A Generalized Birthday
// Problem", CRYPTO 2002) finds one from 16 lists of the 2^15 pairs
// (d_2j, d_2j+1), each merge zeroing 15 more low bits; the bytes are then
// chosen position by position to make each difference.
inline std::pair<std::string, std::string> fnvCollision(std::uint64_t salt)
{
    constexpr int N = 32, R = 90, LISTS = N / 2;
    std::array<std::uint64_t, N> weight{};
    std::uint64_t w = 1;
    for (int i = N - 1; i >= 0; --i) {
        weight[std::size_t(i)] = w;
        w *= FNV_PRIME;
    }
    struct Node {
        std::uint64_t sum;
        std::uint32_t left, right;  // level 0: d + R of the two positions; above: indexes one level down
    };
    std::vector<std::vector<std::vector<Node>>> levels(1);
    for (int j = 0; j < LISTS; ++j) {
        std::vector<Node> list;
        for (int a = -R; a <= R; ++a)
            for (int b = -R; b <= R; ++b)
                list.push_back({std::uint64_t(std::int64_t(a)) * weight[std::size_t(2 * j)]
                                    + std::uint64_t(std::int64_t(b)) * weight[std::size_t(2 * j + 1)],
                                std::uint32_t(a + R), std::uint32_t(b + R)});
        levels[0].push_back(std::move(list));
    }
    const std::uint64_t masks[] = {(1ULL << 15) - 1, (1ULL << 30) - 1, (1ULL << 45) - 1, ~0ULL};
    for (std::uint64_t mask : masks) {
        const auto& below = levels.back();
        std::vector<std::vector<Node>> next;
        for (std::size_t j = 0; j + 1 < below.size(); j += 2) {
            const std::vector<Node>& A = below[j];
            std::vector<std::uint32_t> order(below[j + 1].size());
            std::iota(order.begin(), order.end(), 0u);
            const std::vector<Node>& B = below[j + 1];
            std::sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) { return (B[x].sum & mask) < (B[y].sum & mask); });
            std::vector<Node> merged;
            for (std::uint32_t ia = 0; ia < A.size() && merged.size() < (1u << 16); ++ia) {
                const std::uint64_t want = (0 - A[ia].sum) & mask;
                auto it = std::lower_bound(order.begin(), order.end(), want, [&](std::uint32_t x, std::uint64_t v) { return (B[x].sum & mask) < v; });
                for (; it != order.end() && (B[*it].sum & mask) == want; ++it)
                    merged.push_back({A[ia].sum + B[*it].sum, ia, *it});
            }
            next.push_back(std::move(merged));
        }
        levels.push_back(std::move(next));
    }
    // Every node of the last level sums to 0: read its differences back.
    std::array<int, N> d{};
    std::function<void(std::size_t, std::size_t, std::uint32_t)> unfold = [&](std::size_t level, std::size_t list, std::uint32_t index) {
        const Node& n = levels[level][list][index];
        if (level == 0) {
            d[2 * list] = int(n.left) - R;
            d[2 * list + 1] = int(n.right) - R;
            return;
        }
        unfold(level - 1, 2 * list, n.left);
        unfold(level - 1, 2 * list + 1, n.right);
    };
    for (std::uint32_t s = 0; s < levels.back()[0].size(); ++s) {
        unfold(levels.size() - 1, 0, s);
        if (std::all_of(d.begin(), d.end(), [](int x) { return x == 0; }))
            continue;  // the trivial solution: two equal strings
        std::string a, b;
        std::uint64_t y = 0xcbf29ce484222325ULL ^ salt, z = y;
        bool ok = true;
        for (int i = 0; i < N && ok; ++i) {
            const int L = int(y & 255), M = int(z & 255);
            const int T = d[std::size_t(i)] + L - M;  // the low bytes after the XOR must differ by T
            ok = T >= -255 && T <= 255;
            const int v = T >= 0 ? T : 0, u = v - T;
            const auto ca = static_cast<unsigned char>(L ^ v), cb = static_cast<unsigned char>(M ^ u);
            a.push_back(char(ca));
            b.push_back(char(cb));
            y = (y ^ ca) * FNV_PRIME;
            z = (z ^ cb) * FNV_PRIME;
        }
        if (ok && y == z && a != b)
            return {a, b};
    }
    qFatal("no FNV-1a collision found");
}

// ---- one key's window cells (Window.h) ---------------------------------------

inline constexpr Millis EPOCH_2026 = 1'790'000'040'000;  // a multiple of 60 s (so of 3 s and 300 ms too)

inline constexpr auto SLIDING = Algorithm::SlidingWindow;
inline constexpr auto FIXED = Algorithm::FixedWindow;
inline constexpr auto LOCKOUT = Algorithm::Lockout;

inline Level makeLevel(Algorithm algorithm, std::uint32_t limit, Millis periodMs, Millis bucketMs = 0, Millis lockoutMs = 0,
                       bool countRefused = false)
{
    Level l = level(limit, periodMs, algorithm);
    l.bucketMs = bucketMs;
    l.lockoutMs = lockoutMs;
    l.countRefused = countRefused;
    return l;
}

// One key's cells for one level, used the way the engine uses them.
struct Key {
    explicit Key(const Level& l)
        : spec(LevelSpec::compile(l, "test"))
        , cells(spec.cells, 0u)
    {
    }
    Verdict eval(Millis now) { return Floodgate::Core::evaluate(spec, cells.data(), now); }
    // A request: counted when the level lets it through, refused otherwise.
    Verdict hit(Millis now)
    {
        const Verdict v = eval(now);
        if (v.allowed)
            Floodgate::Core::count(spec, cells.data(), now);
        else
            Floodgate::Core::refuse(spec, cells.data(), now);
        return v;
    }
    Millis resetAfterCount(Millis now) const { return Floodgate::Core::resetAfterCount(spec, cells.data(), now); }
    // The level as a cluster's shared level compiles it: the wide layout;
    // its cells hold no other nodes' counts, so read it without them
    // (peek and bucketsOf with cluster = false).
    static Key shared(const Level& l)
    {
        Key k(l);
        k.spec = LevelSpec::compile(l, "test", true);
        k.cells.assign(k.spec.cells, 0u);
        return k;
    }
    void uncount(Millis now) { Floodgate::Core::uncount(spec, cells.data(), now); }
    std::vector<BucketView> buckets(Millis now) const { return bucketsOf(spec, cells.data(), now); }

    LevelSpec spec;
    std::vector<std::uint32_t> cells;
};

// Two layouts of one level (packed and wide) must answer alike: the same
// verdict, field by field. A QCOMPARE each; the caller returns when
// QTest::currentTestFailed().
inline void compareVerdicts(const Verdict& a, const Verdict& b)
{
    QCOMPARE(a.allowed, b.allowed);
    QCOMPARE(a.used, b.used);
    QCOMPARE(a.resetMs, b.resetMs);
    QCOMPARE(a.retryAfterMs, b.retryAfterMs);
    QCOMPARE(a.windowStartMs, b.windowStartMs);
}

// How compareLayouts() steps through time: besides bursts (0-2 ms apart),
// steps of up to nearMs, a few of up to farMs, and late stamps, up to lateMs
// before the latest stamp seen (two listener threads may stamp in one order
// and decide in the other).
struct RandomSteps {
    Millis nearMs = 0;
    Millis farMs = 0;
    Millis lateMs = 0;
};

// Drives two layouts of one level (packed and wide) through the same 20,000
// random requests and compares every answer: the verdict, the reset after a
// count, a reservation given back now and then, peek() and the buckets. Some
// steps land just past the last answer's edge (a bucket leaving, a window's
// or a lockout's end), so the late stamps that follow cross it. The wide key
// has no remote cells: it is read without them (cluster = false). On a
// failure the last stamps are printed; the caller returns when
// QTest::currentTestFailed().
inline void compareLayouts(Key& packed, Key& wide, std::uint64_t seed, Millis base, RandomSteps s)
{
    std::mt19937_64 rng(seed);
    Millis latest = base;
    Millis edge = base;  // where the last answer changes: a bucket, a window or a lockout ends
    std::array<std::pair<Millis, bool>, 8> trail{};  // the last stamps and whether they passed
    const auto fail = [&](int step, Millis at) {
        QByteArray t;
        for (std::size_t i = 0; i < trail.size() && std::size_t(step) > i; ++i) {
            const auto& [stamp, allowed] = trail[(std::size_t(step) - 1 - i) % trail.size()];
            t += " " + QByteArray::number(qint64(stamp - base)) + (allowed ? "+" : "-");
        }
        qWarning("step %d: stamp base+%lld (latest base+%lld); before it, newest first (+ allowed, - refused):%s", step,
                 qint64(at - base), qint64(latest - base), t.constData());
    };
    for (int step = 0; step < 20'000; ++step) {
        const std::uint64_t r = rng() % 100;
        Millis at = latest;
        if (r < 55)
            at += Millis(rng() % 3);
        else if (r < 80)
            at += Millis(rng() % std::uint64_t(s.nearMs + 1));
        else if (r < 87)
            at += Millis(rng() % std::uint64_t(s.farMs + 1));
        else if (r < 92)
            at = std::max(at, edge + Millis(rng() % 3));
        else
            at = std::max(base, latest - 1 - Millis(rng() % std::uint64_t(s.lateMs)));
        latest = std::max(latest, at);
        // The checks of one step; a QCOMPARE that fails returns from it.
        const auto check = [&] {
            const Verdict a = packed.hit(at);
            compareVerdicts(a, wide.hit(at));
            if (QTest::currentTestFailed())
                return;
            trail[std::size_t(step) % trail.size()] = {at, a.allowed};
            if (a.allowed) {
                const Millis reset = packed.resetAfterCount(at);
                QCOMPARE(reset, wide.resetAfterCount(at));
                edge = at + reset;
                if (rng() % 8 == 0) {  // a reservation given back
                    packed.uncount(at);
                    wide.uncount(at);
                }
            } else {
                edge = at + a.retryAfterMs;
            }
            compareVerdicts(peek(packed.spec, packed.cells.data(), at), peek(wide.spec, wide.cells.data(), at, false));
            if (QTest::currentTestFailed())
                return;
            const auto pb = packed.buckets(at);
            const auto wb = bucketsOf(wide.spec, wide.cells.data(), at, false);
            QCOMPARE(pb.size(), wb.size());
            for (std::size_t i = 0; i < pb.size(); ++i) {
                QCOMPARE(pb[i].startMs, wb[i].startMs);
                QCOMPARE(pb[i].count, wb[i].count);
            }
        };
        check();
        if (QTest::currentTestFailed())
            return fail(step, at);
    }
}

// The data of a case that runs twice: from t = 0 and from a 2026 wall-clock
// time, to show the arithmetic does not depend on the epoch.
inline void addBases()
{
    QTest::addColumn<qint64>("base");
    QTest::newRow("from 0") << qint64(0);
    QTest::newRow("2026") << qint64(EPOCH_2026);
}

} // namespace Floodgate::Core::Test

// A decision's action, with the whole decision in the message when it differs.
// Evaluates its decision once: QVERIFY2 builds its message even when the
// check passes, so a decide() call written inline would otherwise run twice.
#define COMPARE_ACTION(expr, expected)                                                                   \
    do {                                                                                                 \
        const ::Floodgate::Core::Decision decided_ = (expr);                                             \
        QVERIFY2(decided_.action == (expected),                                                          \
                 (::Floodgate::Core::Test::label(expected) + " expected, got "                           \
                  + ::Floodgate::Core::Test::describe(decided_)).constData());                            \
    } while (false)
