// SPDX-License-Identifier: GPL-3.0-or-later
// Where the cluster's Redis is and how to log in: the --redis URL, parsed
// once. The password lives only in `password`; every text made from a URL
// for a person (redacted(), address(), parse errors) leaves it out, so a
// log line or the console can never show it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace Floodgate::Cluster {

struct RedisUrl {
    std::string host;          // name or address, IPv6 without brackets ("::1"); empty for a unix socket
    std::uint16_t port = 6379;
    std::string unixPath;      // absolute; set only for unix://
    std::string user;          // an ACL user (Redis 6+); empty = the default user
    std::string password;      // percent-decoded; empty = no AUTH
    int db = 0;                // SELECT db after connecting when not 0

    bool isUnix() const { return !unixPath.empty(); }
    friend bool operator==(const RedisUrl&, const RedisUrl&) = default;

    // The URL with the password as "***", always in one spelling:
    // "redis://alice:***@127.0.0.1:6380/2", "redis://[::1]:6379",
    // "unix://:***@/run/redis.sock?db=1". What logs and the console show.
    std::string redacted() const;

    // The server alone, for messages: "127.0.0.1:6380", "[::1]:6379",
    // "/run/redis.sock".
    std::string address() const;

    // Accepted:
    //   redis://HOST[:PORT][/DB]
    //   redis://:PASSWORD@HOST[:PORT][/DB]
    //   redis://USER:PASSWORD@HOST[:PORT][/DB]      (an ACL user)
    //   redis://[IPV6]:PORT...
    //   unix:///PATH/TO/redis.sock[?db=N]
    //   unix://[USER]:PASSWORD@/PATH/TO/redis.sock[?db=N]
    // USER and PASSWORD may be percent-encoded (%40 for '@', %25 for '%').
    // In redis:// URLs the credentials end at the last '@', so a raw '@'
    // or '/' in a password works too; in unix:// URLs they end at the first
    // "@/". On failure returns nullopt and sets *why (if given) to one line
    // starting "redis URL: " that names the problem and never quotes the
    // text (a mistyped URL can put the password anywhere).
    static std::optional<RedisUrl> parse(std::string_view text, std::string* why = nullptr);
};

} // namespace Floodgate::Cluster
