// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/ClientIdentity.h"

#include "core/Rules.h"

namespace Floodgate::Http {

using Core::IpAddress;

namespace {

bool isOws(char c)
{
    return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view s)
{
    while (!s.empty() && isOws(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && isOws(s.back()))
        s.remove_suffix(1);
    return s;
}

// Splits on commas, left to right, each part trimmed.
std::vector<std::string_view> splitList(std::string_view s)
{
    std::vector<std::string_view> out;
    while (true) {
        const auto comma = s.find(',');
        out.push_back(trim(s.substr(0, comma)));
        if (comma == std::string_view::npos)
            break;
        s.remove_prefix(comma + 1);
    }
    return out;
}

} // namespace

TrustedProxies::TrustedProxies(std::vector<Core::Cidr> ranges, std::string header)
    : m_ranges(std::move(ranges))
    , m_header(std::move(header))
    , m_forwarded(Core::equalsIgnoreCase(m_header, "Forwarded"))
{
}

bool TrustedProxies::contains(const IpAddress& a) const
{
    for (const auto& r : m_ranges)
        if (r.contains(a))
            return true;
    return false;
}

std::vector<std::optional<std::string>> forwardedForNodes(std::string_view v)
{
    std::vector<std::optional<std::string>> out;
    const std::size_t n = v.size();
    std::size_t i = 0;
    auto skipOws = [&] {
        while (i < n && isOws(v[i]))
            ++i;
    };
    while (true) {
        // One element: [pair] *( ";" [pair] ), up to a comma outside quotes.
        std::optional<std::string> node;
        int fors = 0;
        bool bad = false;
        bool empty = true;
        while (true) {
            skipOws();
            if (i < n && v[i] != ';' && v[i] != ',') {
                empty = false;
                const std::size_t nameStart = i;
                while (i < n && Core::isTchar(v[i]))
                    ++i;
                const std::string_view name = v.substr(nameStart, i - nameStart);
                if (name.empty() || i >= n || v[i] != '=') {
                    bad = true;
                } else {
                    ++i;
                    std::string value;
                    if (i < n && v[i] == '"') {
                        // quoted-string: a backslash escapes the next character.
                        ++i;
                        bool closed = false;
                        while (i < n) {
                            const char c = v[i++];
                            if (c == '\\' && i < n) {
                                value += v[i++];
                            } else if (c == '"') {
                                closed = true;
                                break;
                            } else {
                                value += c;
                            }
                        }
                        bad = !closed;
                    } else {
                        // A token. Brackets and colons are let through
                        // (for=[2001:db8::1] unquoted): a sloppy proxy that
                        // we trust wrote it, and reading it helps nobody else.
                        const std::size_t valueStart = i;
                        while (i < n && !isOws(v[i]) && v[i] != ';' && v[i] != ',' && v[i] != '"')
                            ++i;
                        value = std::string(v.substr(valueStart, i - valueStart));
                        bad = value.empty() || (i < n && v[i] == '"');
                    }
                    if (!bad && Core::equalsIgnoreCase(name, "for")) {
                        ++fors;
                        node = std::move(value);
                    }
                }
                skipOws();
            }
            if (!bad && i < n && v[i] == ';') {
                ++i;
                continue;
            }
            if (!bad && i < n && v[i] != ',')
                bad = true;
            if (bad) {
                while (i < n && v[i] != ',')
                    ++i;
            }
            break;
        }
        if (bad)
            out.emplace_back(std::nullopt);
        else if (!empty)
            out.push_back(fors == 1 ? std::move(node) : std::nullopt);
        if (i >= n)
            break;
        ++i;  // the comma
    }
    return out;
}

std::optional<IpAddress> parseForwardedAddress(std::string_view e)
{
    e = trim(e);
    if (e.size() >= 2 && e.front() == '"' && e.back() == '"')
        e = e.substr(1, e.size() - 2);
    if (e.empty())
        return std::nullopt;
    if (e.front() == '[') {  // [v6] or [v6]:port
        const auto close = e.find(']');
        if (close == std::string_view::npos)
            return std::nullopt;
        return IpAddress::parse(e.substr(1, close - 1));
    }
    // IPv4 with a port ("192.0.2.1:8080"): exactly one colon.
    const auto colon = e.find(':');
    if (colon != std::string_view::npos && e.find(':', colon + 1) == std::string_view::npos)
        e = e.substr(0, colon);
    return IpAddress::parse(e);
}

ClientIdentity resolveClient(const IpAddress& peer, std::string value, const TrustedProxies& trusted)
{
    ClientIdentity id;
    id.client = peer;
    if (trusted.empty() || !trusted.contains(peer) || trim(value).empty())
        return id;
    // The hops, left to right: list entries, or each Forwarded element's for= node.
    std::vector<std::optional<std::string>> forwarded;
    std::vector<std::string_view> listed;
    if (trusted.forwardedSyntax()) {
        forwarded = forwardedForNodes(value);
        for (const auto& node : forwarded) {
            if (!id.chain.empty())
                id.chain += ", ";
            // An obfuscated node ("_hidden") is relayed as it is (RFC 7239
            // section 6.3); one that would not be a single list entry is not.
            const auto a = node ? parseForwardedAddress(*node) : std::nullopt;
            const bool plain = node && !node->empty() && node->find_first_of(",\" \t") == std::string::npos;
            id.chain += a ? a->toString() : plain ? *node : std::string("unknown");
        }
    } else {
        id.chain = std::move(value);
        listed = splitList(id.chain);
    }
    const std::size_t hops = trusted.forwardedSyntax() ? forwarded.size() : listed.size();
    // Right to left: skip trusted hops; the first untrusted one is the client.
    for (std::size_t k = hops; k-- > 0;) {
        std::optional<IpAddress> a;
        if (!trusted.forwardedSyntax())
            a = parseForwardedAddress(listed[k]);
        else if (forwarded[k])
            a = parseForwardedAddress(*forwarded[k]);
        if (!a)
            break;  // not an address: the client is the last hop vouched for
        id.client = *a;
        if (!trusted.contains(*a))
            break;
    }
    return id;
}

} // namespace Floodgate::Http
