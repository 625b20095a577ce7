// SPDX-License-Identifier: GPL-3.0-or-later
#include "cluster/SyncProtocol.h"

#include <algorithm>
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
    // "held,quietMs;H1;H2;...#S1;S2;..." (Scripts.h): the headers the
    // script reads, then the levels as Redis stores them, which it does not
    // parse.
    std::string out;
    std::string stored;
    out.reserve(40 + r.levels.size() * 48);
    stored.reserve(r.levels.size() * 32);
    appendNumber(out, r.held);
    out += ',';
    appendNumber(out, r.quietLeaseMs);
    // Numbers separated by commas, after `lead` (';' between levels).
    auto list = [](std::string& to, char lead, std::initializer_list<std::int64_t> numbers) {
        for (const std::int64_t v : numbers) {
            if (lead)
                to += lead;
            appendNumber(to, v);
            lead = ',';
        }
    };
    for (const Core::SharedLevel& l : r.levels) {
        std::uint64_t total = 0;
        for (const std::uint32_t c : l.counts)
            total += c;
        const auto size = std::int64_t(l.counts.size());
        list(out, ';', {std::int64_t(l.algorithm), l.limit, l.periodMs, l.bucketMs, l.stamp, l.lockedUntil, std::int64_t(total), size});
        list(stored, stored.empty() ? '\0' : ';', {l.stamp, l.lockedUntil, std::int64_t(total), size});
        // Only a sliding window's buckets are read back one by one.
        if (l.algorithm == Core::Algorithm::SlidingWindow)
            for (std::size_t k = 0; k < l.counts.size(); ++k)
                if (l.counts[k] != 0)
                    list(stored, ',', {std::int64_t(k + 1), l.counts[k]});
    }
    out += '#';
    out += stored;
    return out;
}

std::optional<Core::SyncAck> decodeAck(std::string_view text, const Core::SyncReport& report)
{
    // "granted,reserved,leaseMs,lapseAt;O1;O2;..." with each level
    // "stamp,lockedUntil,total[,k,c]..." (Scripts.h).
    Core::SyncAck ack;
    std::vector<std::int64_t> numbers;
    std::size_t part = 0;
    while (true) {
        const auto semi = text.find(';');
        const std::string_view field = text.substr(0, semi);
        if (!readNumbers(field, numbers) || numbers.empty())
            return std::nullopt;
        if (part == 0) {
            if (numbers.size() != 4 || numbers[0] < 0 || numbers[0] > INT32_MAX || numbers[1] < 0 || numbers[2] <= 0 || numbers[3] < 0)
                return std::nullopt;
            ack.granted = std::uint32_t(numbers[0]);
            ack.reserved = std::uint32_t(std::min<std::int64_t>(numbers[1], UINT32_MAX));
            ack.leaseMs = numbers[2];
            ack.reservedLapseAt = numbers[3];
        } else {
            if (part > report.levels.size())
                return std::nullopt;
            const Core::SharedLevel& mine = report.levels[part - 1];
            const bool sliding = mine.algorithm == Core::Algorithm::SlidingWindow;
            if (numbers.size() < 3 || numbers.size() % 2 == 0 || (!sliding && numbers.size() != 3) || numbers[2] < 0)
                return std::nullopt;
            Core::SharedLevel o = mine;
            o.stamp = numbers[0];
            o.lockedUntil = numbers[1];
            std::fill(o.counts.begin(), o.counts.end(), 0u);
            if (!sliding) {
                if (o.counts.size() != 1)
                    return std::nullopt;
                o.counts[0] = std::uint32_t(std::min<std::int64_t>(numbers[2], UINT32_MAX));
            }
            for (std::size_t j = 3; j + 1 < numbers.size(); j += 2) {
                const std::int64_t k = numbers[j];
                const std::int64_t c = numbers[j + 1];
                if (k < 1 || std::size_t(k) > o.counts.size() || c < 0)
                    return std::nullopt;
                o.counts[std::size_t(k - 1)] = std::uint32_t(std::min<std::int64_t>(c, UINT32_MAX));
            }
            ack.others.push_back(std::move(o));
        }
        ++part;
        if (semi == std::string_view::npos)
            break;
        text.remove_prefix(semi + 1);
    }
    if (ack.others.size() != report.levels.size())
        return std::nullopt;
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
    m_bestRtt = best.rtt;
    m_known = true;
}

} // namespace Floodgate::Cluster
