// SPDX-License-Identifier: MIT
// Helpers shared by the engine suites: addresses from text, requests built
// field by field, and readable names for the engine's enums.
//
// Why the names: QCOMPARE(d.action, Action::Throttle) would find
// Floodgate::Core::toString(Action) by argument-dependent lookup; it returns a
// static string that QtTest would delete[] when the comparison fails. So the
// suites compare label(d.action) with label(Action::Throttle) instead, which
// also prints "Action::Throttle" rather than "1" on a failure.
#pragma once

#include "core/Engine.h"
#include "core/SettingTable.h"

#include <QByteArray>
#include <QString>
#include <QtGlobal>

#include <cstdint>
#include <memory>
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
};

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

} // namespace Floodgate::Core::Test
