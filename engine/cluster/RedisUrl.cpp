// SPDX-License-Identifier: GPL-3.0-or-later
#include "cluster/RedisUrl.h"

#include "core/Address.h"
#include "core/Target.h"

#include <charconv>
#include <climits>
#include <sys/un.h>

namespace Floodgate::Cluster {

namespace {

// sockaddr_un::sun_path holds this many bytes before its terminating NUL.
constexpr std::size_t MAX_UNIX_PATH = sizeof(sockaddr_un::sun_path) - 1;

bool isUnreserved(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
}

// A user name as it goes back into a URL: everything but the unreserved
// characters percent-encoded, so redacted() parses back to the same user.
std::string percentEncode(std::string_view s)
{
    static constexpr char HEX[] = "0123456789ABCDEF";
    std::string out;
    for (const char c : s) {
        if (isUnreserved(c)) {
            out += c;
        } else {
            out += '%';
            out += HEX[static_cast<unsigned char>(c) >> 4];
            out += HEX[static_cast<unsigned char>(c) & 15];
        }
    }
    return out;
}

// A host name as getaddrinfo takes it (letters, digits, '-', '.', '_') or
// a dotted IPv4 address; anything else (a space, a '/', a second ':') is a
// typo that would otherwise surface as a confusing "Name or service not known".
bool isHostName(std::string_view s)
{
    if (s.empty() || s.size() > 253)
        return false;
    for (const char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'))
            return false;
    return true;
}

// A whole number in [min, max] with nothing around it.
bool parseNumber(std::string_view s, long long min, long long max, long long& out)
{
    if (s.empty() || s.front() == '+' || s.front() == '-')
        return false;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size() && out >= min && out <= max;
}

constexpr const char* DB_ERROR = "redis URL: the database must be a whole number from 0 (redis://HOST:PORT/DB, unix:///PATH?db=N)";

// "USER:PASSWORD" or ":PASSWORD" into the URL; false with *why set.
bool parseCredentials(std::string_view userInfo, RedisUrl& u, std::string* why)
{
    const auto fail = [&](const char* reason) {
        if (why)
            *why = reason;
        return false;
    };
    const auto colon = userInfo.find(':');
    if (colon == std::string_view::npos)
        return fail("redis URL: write the password with a ':' before it (redis://:PASSWORD@HOST, or redis://USER:PASSWORD@HOST for an ACL user)");
    const auto user = Core::percentDecode(userInfo.substr(0, colon));
    const auto password = Core::percentDecode(userInfo.substr(colon + 1));
    if (!user || !password)
        return fail("redis URL: a '%' in the user or password must be followed by two hex digits (write a literal % as %25)");
    if (password->empty())
        return fail("redis URL: the password after ':' is empty (leave out \"USER:@\" entirely when the server needs no password)");
    u.user = *user;
    u.password = *password;
    return true;
}

} // namespace

std::string RedisUrl::address() const
{
    if (isUnix())
        return unixPath;
    const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return h + ":" + std::to_string(port);
}

std::string RedisUrl::redacted() const
{
    std::string out = isUnix() ? "unix://" : "redis://";
    if (!user.empty() || !password.empty())
        out += percentEncode(user) + (password.empty() ? "@" : ":***@");
    out += address();
    if (db != 0)
        out += isUnix() ? "?db=" + std::to_string(db) : "/" + std::to_string(db);
    return out;
}

std::optional<RedisUrl> RedisUrl::parse(std::string_view text, std::string* why)
{
    const auto fail = [&](const char* reason) -> std::optional<RedisUrl> {
        if (why)
            *why = reason;
        return std::nullopt;
    };
    RedisUrl u;
    if (text.starts_with("unix://")) {
        std::string_view rest = text.substr(7);
        // The credentials, if any, end where the absolute path begins.
        if (!rest.starts_with('/')) {
            const auto at = rest.find("@/");
            if (at == std::string_view::npos)
                return fail("redis URL: the socket path must be absolute (unix:///path/to/redis.sock)");
            if (!parseCredentials(rest.substr(0, at), u, why))
                return std::nullopt;
            rest.remove_prefix(at + 1);
        }
        const auto q = rest.find('?');
        const std::string_view path = rest.substr(0, q);
        if (path.size() < 2)
            return fail("redis URL: no socket path (unix:///path/to/redis.sock)");
        if (path.size() > MAX_UNIX_PATH)
            return fail("redis URL: the socket path is longer than a unix socket address holds (107 bytes)");
        if (path.find('\0') != std::string_view::npos)
            return fail("redis URL: the socket path contains a NUL byte");
        if (q != std::string_view::npos) {
            const std::string_view query = rest.substr(q + 1);
            if (!query.starts_with("db="))
                return fail("redis URL: a unix:// URL takes one parameter, ?db=N");
            long long db = 0;
            if (!parseNumber(query.substr(3), 0, INT_MAX, db))
                return fail(DB_ERROR);
            u.db = int(db);
        }
        u.unixPath = std::string(path);
        return u;
    }
    if (text.starts_with("rediss://"))
        return fail("redis URL: TLS (rediss://) is not supported; use redis:// on a private network or through a tunnel, or unix://");
    if (!text.starts_with("redis://"))
        return fail("redis URL: scheme must be redis:// or unix://");
    std::string_view rest = text.substr(8);
    // Nothing after the host may hold an '@' (the path is a number), so the
    // last '@' ends the credentials whatever the password contains.
    if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
        if (!parseCredentials(rest.substr(0, at), u, why))
            return std::nullopt;
        rest.remove_prefix(at + 1);
    }
    const auto slash = rest.find_first_of("/?#");
    if (slash != std::string_view::npos && rest[slash] != '/')
        return fail("redis URL: unexpected text after the host (redis://HOST[:PORT][/DB]: the database goes in the path)");
    std::string_view hostPort = rest.substr(0, slash);
    std::string_view portText;
    bool hasPort = false;
    if (hostPort.starts_with('[')) {
        const auto close = hostPort.find(']');
        if (close == std::string_view::npos)
            return fail("redis URL: missing ']' after the IPv6 address");
        const std::string_view v6 = hostPort.substr(1, close - 1);
        const auto address = Core::IpAddress::parse(v6);
        if (v6.find(':') == std::string_view::npos || !address)
            return fail("redis URL: the address in [ ] is not an IPv6 address");
        u.host = std::string(v6);
        const std::string_view after = hostPort.substr(close + 1);
        if (!after.empty()) {
            if (!after.starts_with(':'))
                return fail("redis URL: unexpected text after the host (expected [:PORT][/DB])");
            portText = after.substr(1);
            hasPort = true;
        }
    } else {
        const auto colon = hostPort.find(':');
        if (colon != std::string_view::npos && hostPort.find(':', colon + 1) != std::string_view::npos)
            return fail("redis URL: an IPv6 address goes in [ ] (redis://[::1]:6379)");
        u.host = std::string(hostPort.substr(0, colon));
        if (colon != std::string_view::npos) {
            portText = hostPort.substr(colon + 1);
            hasPort = true;
        }
        if (u.host.empty())
            return fail("redis URL: no host (redis://HOST[:PORT][/DB])");
        if (!isHostName(u.host))
            return fail("redis URL: the host is not a host name or an IP address (an IPv6 address goes in [ ])");
    }
    if (hasPort) {
        long long port = 0;
        if (!parseNumber(portText, 1, 65535, port))
            return fail("redis URL: port must be 1-65535");
        u.port = std::uint16_t(port);
    }
    if (slash != std::string_view::npos) {
        const std::string_view path = rest.substr(slash + 1);
        if (path.find_first_of("?#/") != std::string_view::npos)
            return fail("redis URL: unexpected text after the database number (redis://HOST[:PORT][/DB])");
        long long db = 0;
        if (!path.empty() && !parseNumber(path, 0, INT_MAX, db))
            return fail(DB_ERROR);
        u.db = int(db);
    }
    return u;
}

} // namespace Floodgate::Cluster
