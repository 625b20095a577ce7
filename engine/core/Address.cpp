// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/Address.h"

#include <charconv>
#include <cstring>

namespace Floodgate::Core {

namespace {

void setWhy(std::string* why, std::string text)
{
    if (why)
        *why = std::move(text);
}

bool isHex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int hexValue(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return c - 'A' + 10;
}

// Strict dotted quad: four decimal parts 0..255, no leading zeros (they read
// as octal to some parsers, and "010.0.0.1" must not mean two different hosts).
std::optional<std::uint32_t> parseV4(std::string_view s, std::string* why)
{
    std::uint32_t value = 0;
    int parts = 0;
    std::size_t i = 0;
    while (true) {
        if (i >= s.size() || s[i] < '0' || s[i] > '9') {
            setWhy(why, "expected a number 0-255 in part " + std::to_string(parts + 1) + " of the IPv4 address");
            return std::nullopt;
        }
        const std::size_t start = i;
        unsigned part = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
            part = part * 10 + unsigned(s[i] - '0');
            if (part > 255 || i - start >= 3) {
                setWhy(why, "part " + std::to_string(parts + 1) + " of the IPv4 address is over 255");
                return std::nullopt;
            }
            ++i;
        }
        if (i - start > 1 && s[start] == '0') {
            setWhy(why, "part " + std::to_string(parts + 1) + " of the IPv4 address has a leading zero");
            return std::nullopt;
        }
        value = (value << 8) | part;
        ++parts;
        if (parts == 4)
            break;
        if (i >= s.size() || s[i] != '.') {
            setWhy(why, "an IPv4 address has four parts separated by dots");
            return std::nullopt;
        }
        ++i;
    }
    if (i != s.size()) {
        setWhy(why, "unexpected \"" + std::string(s.substr(i)) + "\" after the IPv4 address");
        return std::nullopt;
    }
    return value;
}

std::optional<IpAddress::Bytes> parseV6(std::string_view s, std::string* why)
{
    if (s.find('%') != std::string_view::npos) {
        setWhy(why, "zone identifiers (%...) are not accepted");
        return std::nullopt;
    }
    std::uint16_t groups[8] = {};
    int count = 0;
    int gap = -1;  // index where "::" stands
    std::size_t i = 0;
    if (s.starts_with("::")) {
        gap = 0;
        i = 2;
    } else if (s.starts_with(":")) {
        setWhy(why, "an IPv6 address cannot start with a single ':'");
        return std::nullopt;
    }
    while (i < s.size()) {
        // An embedded IPv4 tail (::ffff:1.2.3.4, 64:ff9b::1.2.3.4).
        const std::size_t nextColon = s.find(':', i);
        const std::string_view token = s.substr(i, nextColon == std::string_view::npos ? s.size() - i : nextColon - i);
        if (token.find('.') != std::string_view::npos) {
            if (nextColon != std::string_view::npos) {
                setWhy(why, "an embedded IPv4 address may only stand at the end");
                return std::nullopt;
            }
            if (count > 6) {
                setWhy(why, "too many groups before the embedded IPv4 address");
                return std::nullopt;
            }
            std::string v4why;
            auto v4 = parseV4(token, &v4why);
            if (!v4) {
                setWhy(why, v4why);
                return std::nullopt;
            }
            groups[count++] = std::uint16_t(*v4 >> 16);
            groups[count++] = std::uint16_t(*v4 & 0xffff);
            i = s.size();
            break;
        }
        if (token.empty()) {
            setWhy(why, "empty group in the IPv6 address");
            return std::nullopt;
        }
        if (token.size() > 4) {
            setWhy(why, "an IPv6 group has at most four hex digits");
            return std::nullopt;
        }
        unsigned g = 0;
        for (char c : token) {
            if (!isHex(c)) {
                setWhy(why, std::string("'") + c + "' is not a hex digit");
                return std::nullopt;
            }
            g = (g << 4) | unsigned(hexValue(c));
        }
        if (count >= 8) {
            setWhy(why, "an IPv6 address has at most eight groups");
            return std::nullopt;
        }
        groups[count++] = std::uint16_t(g);
        i += token.size();
        if (i == s.size())
            break;
        // i points at ':'
        if (i + 1 < s.size() && s[i + 1] == ':') {
            if (gap >= 0) {
                setWhy(why, "'::' may appear only once in an IPv6 address");
                return std::nullopt;
            }
            gap = count;
            i += 2;
        } else {
            ++i;
            if (i == s.size()) {
                setWhy(why, "an IPv6 address cannot end with a single ':'");
                return std::nullopt;
            }
        }
    }
    if (gap < 0 && count != 8) {
        setWhy(why, "an IPv6 address needs eight groups or a '::'");
        return std::nullopt;
    }
    if (gap >= 0 && count == 8) {
        setWhy(why, "'::' must stand for at least one zero group");
        return std::nullopt;
    }
    IpAddress::Bytes b{};
    std::uint16_t full[8] = {};
    if (gap < 0) {
        for (int k = 0; k < 8; ++k)
            full[k] = groups[k];
    } else {
        const int tail = count - gap;
        for (int k = 0; k < gap; ++k)
            full[k] = groups[k];
        for (int k = 0; k < tail; ++k)
            full[8 - tail + k] = groups[gap + k];
    }
    for (int k = 0; k < 8; ++k) {
        b[std::size_t(2 * k)] = std::uint8_t(full[k] >> 8);
        b[std::size_t(2 * k + 1)] = std::uint8_t(full[k] & 0xff);
    }
    return b;
}

} // namespace

IpAddress IpAddress::fromV4(std::uint32_t v)
{
    Bytes b{};
    b[10] = 0xff;
    b[11] = 0xff;
    b[12] = std::uint8_t(v >> 24);
    b[13] = std::uint8_t(v >> 16);
    b[14] = std::uint8_t(v >> 8);
    b[15] = std::uint8_t(v);
    return IpAddress(b);
}

std::optional<IpAddress> IpAddress::parse(std::string_view text, std::string* why)
{
    if (text.empty()) {
        setWhy(why, "the address is empty");
        return std::nullopt;
    }
    if (text.front() == '[') {
        if (text.back() != ']') {
            setWhy(why, "missing ']' after the bracketed IPv6 address");
            return std::nullopt;
        }
        text = text.substr(1, text.size() - 2);
        if (text.find(':') == std::string_view::npos) {
            setWhy(why, "brackets are only for IPv6 addresses");
            return std::nullopt;
        }
    }
    for (char c : text) {
        if (c == ' ' || c == '\t') {
            setWhy(why, "the address contains spaces");
            return std::nullopt;
        }
    }
    if (text.find(':') != std::string_view::npos) {
        auto b = parseV6(text, why);
        if (!b)
            return std::nullopt;
        return IpAddress(*b);
    }
    auto v4 = parseV4(text, why);
    if (!v4)
        return std::nullopt;
    return fromV4(*v4);
}

bool IpAddress::isV4() const
{
    for (int i = 0; i < 10; ++i)
        if (m_bytes[std::size_t(i)] != 0)
            return false;
    return m_bytes[10] == 0xff && m_bytes[11] == 0xff;
}

std::uint32_t IpAddress::v4() const
{
    return (std::uint32_t(m_bytes[12]) << 24) | (std::uint32_t(m_bytes[13]) << 16) | (std::uint32_t(m_bytes[14]) << 8)
        | std::uint32_t(m_bytes[15]);
}

bool IpAddress::isLoopback() const
{
    if (isV4())
        return m_bytes[12] == 127;
    for (int i = 0; i < 15; ++i)
        if (m_bytes[std::size_t(i)] != 0)
            return false;
    return m_bytes[15] == 1;
}

std::uint64_t IpAddress::hi() const
{
    std::uint64_t v;
    std::memcpy(&v, m_bytes.data(), 8);
    return __builtin_bswap64(v);  // the bytes are in network order
}

std::uint64_t IpAddress::lo() const
{
    std::uint64_t v;
    std::memcpy(&v, m_bytes.data() + 8, 8);
    return __builtin_bswap64(v);
}

IpAddress IpAddress::masked(int bits) const
{
    if (bits >= 128)
        return *this;
    if (bits < 0)
        bits = 0;
    // Two 64-bit ANDs in network order: this runs for every list probe.
    const std::uint64_t hiMask = bits >= 64 ? ~0ULL : (bits == 0 ? 0 : ~0ULL << (64 - bits));
    const std::uint64_t loMask = bits <= 64 ? 0 : ~0ULL << (128 - bits);
    const std::uint64_t h = __builtin_bswap64(hi() & hiMask);
    const std::uint64_t l = __builtin_bswap64(lo() & loMask);
    Bytes b;
    std::memcpy(b.data(), &h, 8);
    std::memcpy(b.data() + 8, &l, 8);
    return IpAddress(b);
}

std::size_t IpAddress::format(char* out) const
{
    char* p = out;
    if (isV4()) {
        for (std::size_t k = 12; k < 16; ++k) {
            if (k > 12)
                *p++ = '.';
            p = std::to_chars(p, out + maxTextLength, unsigned(m_bytes[k])).ptr;
        }
        return std::size_t(p - out);
    }
    unsigned g[8];
    for (int k = 0; k < 8; ++k)
        g[k] = (unsigned(m_bytes[std::size_t(2 * k)]) << 8) | m_bytes[std::size_t(2 * k + 1)];
    // RFC 5952 4.2: compress the longest run of two or more zero groups, the
    // first one on a tie.
    int bestStart = -1, bestLen = 0;
    for (int k = 0; k < 8;) {
        if (g[k] != 0) {
            ++k;
            continue;
        }
        int j = k;
        while (j < 8 && g[j] == 0)
            ++j;
        if (j - k > bestLen && j - k >= 2) {
            bestStart = k;
            bestLen = j - k;
        }
        k = j;
    }
    for (int k = 0; k < 8; ++k) {
        if (k == bestStart) {
            *p++ = ':';
            *p++ = ':';
            k += bestLen - 1;
            continue;
        }
        if (p != out && p[-1] != ':')
            *p++ = ':';
        p = std::to_chars(p, out + maxTextLength, g[k], 16).ptr;
    }
    return std::size_t(p - out);
}

void IpAddress::appendTo(std::string& out) const
{
    char buf[maxTextLength];
    out.append(buf, format(buf));
}

std::string IpAddress::toString() const
{
    char buf[maxTextLength];
    return std::string(buf, format(buf));
}

Cidr::Cidr(const IpAddress& address, int prefixBits128)
    : m_address(address.masked(prefixBits128))
    , m_prefix(prefixBits128 < 0 ? 0 : (prefixBits128 > 128 ? 128 : prefixBits128))
{
}

std::optional<Cidr> Cidr::parse(std::string_view text, std::string* why)
{
    const auto slash = text.find('/');
    const std::string_view addrText = text.substr(0, slash);
    auto address = IpAddress::parse(addrText, why);
    if (!address)
        return std::nullopt;
    const bool v4 = address->isV4() && addrText.find(':') == std::string_view::npos;
    const int maxBits = v4 ? 32 : 128;
    int bits = maxBits;
    if (slash != std::string_view::npos) {
        const std::string_view p = text.substr(slash + 1);
        if (p.empty()) {
            setWhy(why, "missing prefix length after '/'");
            return std::nullopt;
        }
        if (p.size() > 1 && p[0] == '0') {
            setWhy(why, "the prefix length has a leading zero");
            return std::nullopt;
        }
        int value = 0;
        auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
        if (ec != std::errc() || ptr != p.data() + p.size()) {
            setWhy(why, "the prefix length \"" + std::string(p) + "\" is not a number");
            return std::nullopt;
        }
        if (value < 0 || value > maxBits) {
            setWhy(why, "prefix length /" + std::string(p) + " is out of range (0-" + std::to_string(maxBits)
                    + (v4 ? " for IPv4)" : " for IPv6)"));
            return std::nullopt;
        }
        bits = value;
    }
    // An IPv4 address written as ::ffff:a.b.c.d/p with p >= 96 is the same range.
    const int bits128 = v4 ? 96 + bits : bits;
    return Cidr(*address, bits128);
}

int Cidr::prefixLength() const
{
    return isV4() ? m_prefix - 96 : m_prefix;
}

std::string Cidr::toString() const
{
    return m_address.toString() + "/" + std::to_string(prefixLength());
}

IpAddress countingKey(const IpAddress& client, int ipv6PrefixBits, int ipv4PrefixBits)
{
    if (client.isV4())
        return client.masked(96 + ipv4PrefixBits);
    return client.masked(ipv6PrefixBits);
}

} // namespace Floodgate::Core
