// SPDX-License-Identifier: GPL-3.0-or-later
#include "cluster/SyncProtocol.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <initializer_list>

namespace Floodgate::Cluster {

namespace {

void appendNumber(std::string& out, std::int64_t v)
{
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

// Reads comma-separated integers from `s` into `out`; false on anything else.
bool readNumbers(std::string_view s, std::vector<std::int64_t>& out)
{
    out.clear();
    while (!s.empty()) {
        const auto comma = s.find(',');
        const std::string_view part = s.substr(0, comma);
        std::int64_t v = 0;
        const auto r = std::from_chars(part.data(), part.data() + part.size(), v);
        if (r.ec != std::errc() || r.ptr != part.data() + part.size())
            return false;
        out.push_back(v);
        if (comma == std::string_view::npos)
            break;
        s.remove_prefix(comma + 1);
    }
    return true;
}

} // namespace

std::string encodeReport(const Core::SyncReport& r)
{
    // "QH1;H2;...#S1;S2;...;=T" (Scripts.cpp): the few numbers the script
    // reads for a client far below its limits, the headers it reads for
    // any other, then the field Redis stores, which it does not parse.
    std::string quick;
    std::string heads;
    std::string stored;
    std::string summary;
    quick.reserve(33 + r.levels.size() * 16);
    heads.reserve(r.levels.size() * 48);
    stored.reserve(r.levels.size() * 32 + 16);
    Core::Millis window = 0;
    Core::Millis locked = 0;
    for (const Core::SharedLevel& l : r.levels) {
        window = std::max(window, l.periodMs + l.bucketMs);
        if (l.algorithm == Core::Algorithm::Lockout)
            locked = std::max(locked, l.lockedUntil);
    }
    // Numbers separated by commas, after `lead` ('\0': none).
    auto list = [](std::string& to, char lead, std::initializer_list<std::int64_t> numbers) {
        for (const std::int64_t v : numbers) {
            if (lead)
                to += lead;
            appendNumber(to, v);
            lead = ',';
        }
    };
    // The quick numbers as little-endian doubles after a byte that says how
    // many levels follow: the script reads them all with one
    // struct.unpack, no text to parse (every value here is below 2^53).
    static_assert(Core::Tuning::maxLevelsPerEntry < 256, "a report counts its levels in a byte");
    quick += char(r.levels.size());
    auto binary = [&quick](std::initializer_list<std::int64_t> numbers) {
        for (const std::int64_t v : numbers) {
            const auto bits = std::bit_cast<std::uint64_t>(double(v));
            for (int b = 0; b < 8; ++b)
                quick += char((bits >> (8 * b)) & 0xff);
        }
    };
    binary({r.held, r.quietLeaseMs, window, locked});
    for (const Core::SharedLevel& l : r.levels) {
        std::uint64_t total = 0;
        for (const std::uint32_t c : l.counts)
            total += c;
        const auto size = std::int64_t(l.counts.size());
        binary({l.limit, std::int64_t(total)});
        list(heads, heads.empty() ? '\0' : ';', {std::int64_t(l.algorithm), l.limit, l.periodMs, l.bucketMs, l.stamp, l.lockedUntil, std::int64_t(total), size});
        list(stored, stored.empty() ? '\0' : ';', {l.stamp, l.lockedUntil, std::int64_t(total), size});
        list(summary, summary.empty() ? '\0' : ',', {std::int64_t(total)});
        // Only a sliding window's buckets are read back one by one.
        if (l.algorithm == Core::Algorithm::SlidingWindow)
            for (std::size_t k = 0; k < l.counts.size(); ++k)
                if (l.counts[k] != 0)
                    list(stored, ',', {std::int64_t(k + 1), l.counts[k]});
    }
    list(summary, summary.empty() ? '\0' : ',', {locked});
    std::string out;
    out.reserve(quick.size() + heads.size() + stored.size() + summary.size() + 4);
    out += quick;
    out += heads;
    out += '#';
    out += stored;
    out += ";=";
    out += summary;
    return out;
}

namespace {

// Adds another node's stored field "written;leaseUntil;lease;S1;S2;...[;=T]"
// (Scripts.cpp) to `others`, its buckets aligned to the report's: what the
// report script did in Redis before the fields had a summary, the same
// arithmetic. `now` is Redis's clock (a lockout window's age). False when a
// level does not read.
bool addField(std::string_view field, const Core::SyncReport& report, std::int64_t now, std::vector<Core::SharedLevel>& others)
{
    std::vector<std::int64_t> g;
    for (int skip = 0; skip < 3; ++skip) {  // written, leaseUntil, lease
        const auto semi = field.find(';');
        if (semi == std::string_view::npos)
            return false;
        field.remove_prefix(semi + 1);
    }
    auto add = [](std::uint32_t& to, std::int64_t c) { to = std::uint32_t(std::min<std::int64_t>(std::int64_t(to) + c, UINT32_MAX)); };
    for (std::size_t l = 0; l < report.levels.size() && !field.empty(); ++l) {
        const auto semi = field.find(';');
        const std::string_view level = field.substr(0, semi);
        field.remove_prefix(semi == std::string_view::npos ? field.size() : semi + 1);
        // "stamp,lockedUntil,total,n[,k,c]..."
        if (!readNumbers(level, g) || g.size() < 4 || g.size() % 2 != 0 || g[2] < 0)
            return false;
        const Core::SharedLevel& mine = report.levels[l];
        Core::SharedLevel& o = others[l];
        if (g[2] > 0) {
            switch (mine.algorithm) {
            case Core::Algorithm::SlidingWindow: {
                // Their bucket k (from their oldest) lands at my position
                // n - (my stamp - its stamp); a bucket newer than mine (the
                // other node's clock turned first) counts as my newest.
                const auto n = std::int64_t(mine.counts.size());
                const std::int64_t shift = mine.stamp - g[0] + g[3];
                for (std::size_t j = 4; j + 1 < g.size(); j += 2) {
                    if (g[j + 1] < 0)
                        return false;
                    const std::int64_t age = std::max<std::int64_t>(0, shift - g[j]);
                    if (age < n)
                        add(o.counts[std::size_t(n - age - 1)], g[j + 1]);
                }
                break;
            }
            case Core::Algorithm::FixedWindow:
                // the same window, or the next one already started there
                if (g[0] >= mine.stamp)
                    add(o.counts[0], g[2]);
                break;
            case Core::Algorithm::Lockout:
                // a window still open counts; the latest start is kept
                if (now - g[0] < mine.periodMs) {
                    add(o.counts[0], g[2]);
                    o.stamp = std::max(o.stamp, g[0]);
                }
                break;
            }
        }
        if (mine.algorithm == Core::Algorithm::Lockout)
            o.lockedUntil = std::max(o.lockedUntil, g[1]);
    }
    return true;
}

} // namespace

std::optional<Core::SyncAck> decodeAck(std::string_view text, const Core::SyncReport& report)
{
    // "granted,reserved,leaseMs,lapseAt,now|F|F..." with each F another
    // node's field as Redis stores it (Scripts.cpp).
    Core::SyncAck ack;
    std::vector<std::int64_t> numbers;
    auto bar = text.find('|');
    if (!readNumbers(text.substr(0, bar), numbers) || numbers.size() != 5 || numbers[0] < 0 || numbers[0] > INT32_MAX || numbers[1] < 0 ||
        numbers[2] <= 0 || numbers[3] < 0)
        return std::nullopt;
    ack.granted = std::uint32_t(numbers[0]);
    ack.reserved = std::uint32_t(std::min<std::int64_t>(numbers[1], UINT32_MAX));
    ack.leaseMs = numbers[2];
    ack.reservedLapseAt = numbers[3];
    const std::int64_t now = numbers[4];
    for (const Core::SharedLevel& mine : report.levels) {
        if (mine.counts.empty() || (mine.algorithm != Core::Algorithm::SlidingWindow && mine.counts.size() != 1))
            return std::nullopt;
        Core::SharedLevel o = mine;
        if (mine.algorithm == Core::Algorithm::Lockout)
            o.stamp = 0;
        o.lockedUntil = 0;
        std::fill(o.counts.begin(), o.counts.end(), 0u);
        ack.others.push_back(std::move(o));
    }
    while (bar != std::string_view::npos) {
        text.remove_prefix(bar + 1);
        bar = text.find('|');
        if (!addField(text.substr(0, bar), report, now, ack.others))
            return std::nullopt;
    }
    ack.ok = true;
    return ack;
}

namespace {

constexpr char UNIT = '\x1f';

std::string clean(std::string s)
{
    for (char& c : s)
        if (c == UNIT)
            c = ' ';
    return s;
}

} // namespace

std::string encodeEntry(const Core::ListEntry& e)
{
    std::string out = e.range.toString();
    out += UNIT;
    out += clean(e.reason);
    out += UNIT;
    appendNumber(out, std::int64_t(e.source));
    out += UNIT;
    appendNumber(out, e.createdAt);
    out += UNIT;
    out += clean(e.createdBy);
    out += UNIT;
    appendNumber(out, e.expiresAt);
    if (e.banCount > 0) {  // an automatic ban: which of the client's bans it is
        out += UNIT;
        appendNumber(out, std::int64_t(e.banCount));
    }
    return out;
}

std::optional<Core::ListEntry> decodeEntry(std::string_view text)
{
    std::vector<std::string_view> parts;
    while (true) {
        const auto at = text.find(UNIT);
        parts.push_back(text.substr(0, at));
        if (at == std::string_view::npos)
            break;
        text.remove_prefix(at + 1);
    }
    if (parts.size() != 6 && parts.size() != 7)
        return std::nullopt;
    auto number = [](std::string_view s, std::int64_t& v) {
        const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
        return r.ec == std::errc() && r.ptr == s.data() + s.size();
    };
    Core::ListEntry e;
    const auto range = Core::Cidr::parse(parts[0]);
    std::int64_t source = 0;
    if (!range || !number(parts[2], source) || source < 0 || source > 2 || !number(parts[3], e.createdAt) || !number(parts[5], e.expiresAt))
        return std::nullopt;
    e.range = *range;
    e.reason = std::string(parts[1]);
    e.source = Core::ListSource(source);
    e.createdBy = std::string(parts[4]);
    if (parts.size() == 7) {
        std::int64_t bans = 0;
        if (!number(parts[6], bans) || bans < 1 || bans > std::int64_t(UINT32_MAX))
            return std::nullopt;
        e.banCount = std::uint32_t(bans);
    }
    return e;
}

void Breaker::success()
{
    m_state = State::Closed;
}

void Breaker::failure(Core::Millis now)
{
    if (m_state == State::Closed)
        ++m_opened;
    m_state = State::Open;
    m_nextProbe = now + m_probeMs;
}

void ClockOffset::sample(Core::Millis sentMs, Core::Millis receivedMs, std::int64_t redisMicros)
{
    if (receivedMs < sentMs)
        return;  // this node's clock stepped back during the call: no use
    Sample s;
    s.rtt = receivedMs - sentMs;
    s.offset = redisMicros / 1000 - (sentMs + s.rtt / 2);
    m_samples[m_next] = s;
    m_next = (m_next + 1) % Window;
    m_count = std::min(m_count + 1, Window);
    Sample best = m_samples[0];
    for (int i = 1; i < m_count; ++i)
        if (m_samples[i].rtt < best.rtt)
            best = m_samples[i];
    m_offsetMs = best.offset;
    m_known = true;
}

} // namespace Floodgate::Cluster
