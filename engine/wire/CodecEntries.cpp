// SPDX-License-Identifier: GPL-3.0-or-later
// Safelist and blocklist entries as JSON.
#include "wire/Codec.h"
#include "wire/JsonReader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace Floodgate::Wire::Codec {

using namespace Core;

Json toJson(const ListEntry& e, ListKind kind, Millis now)
{
    Json j = Json::object();
    j.set("address", e.range.toString());
    j.set("list", toString(kind));
    j.set("reason", e.reason);
    j.set("source", toString(e.source));
    j.set("created_by", e.createdBy);
    j.set("created_at", formatTime(e.createdAt));
    j.set("expires_at", e.expiresAt == NeverExpires ? Json() : Json(formatTime(e.expiresAt)));
    // Whole seconds left, rounded up (0 once expired): the console's countdown.
    j.set("expires_in", e.expiresAt == NeverExpires ? Json() : Json(secondsRoundedUp(e.expiresAt - now)));
    return j;
}

std::optional<EntryInput> entryFromJson(const Json& body, Millis now, Millis defaultTtlMs, std::string* why)
{
    Reader r(body, "", why);
    if (!r.isObject({"address", "ttl", "reason", "expires_at"}))
        return std::nullopt;
    EntryInput in;
    std::string address;
    if (!r.string("address", address, true, 64) || !r.string("reason", in.reason, false, 500))
        return std::nullopt;
    std::string addressWhy;
    const auto range = Cidr::parse(address, &addressWhy);
    if (!range) {
        fail(why, "address: " + addressWhy);
        return std::nullopt;
    }
    in.range = *range;
    const Json* ttl = r.get("ttl");
    const Json* expires = r.get("expires_at");
    if (ttl && expires && !expires->isNull()) {
        fail(why, "ttl and expires_at: give one, not both");
        return std::nullopt;
    }
    if (expires && !expires->isNull()) {
        if (!expires->isString()) {
            fail(why, "expires_at must be an RFC 3339 time string or null");
            return std::nullopt;
        }
        std::string timeWhy;
        const auto at = parseTime(expires->asString(), &timeWhy);
        if (!at) {
            fail(why, "expires_at " + timeWhy);
            return std::nullopt;
        }
        if (*at <= now) {
            fail(why, "expires_at must be in the future");
            return std::nullopt;
        }
        in.expiresAt = *at;
    } else if (expires) {
        in.expiresAt = NeverExpires;  // "expires_at": null
    } else if (!ttl) {
        in.expiresAt = now + defaultTtlMs;
    } else if (ttl->isNull()) {
        in.expiresAt = NeverExpires;
    } else {
        std::string ttlWhy;
        const auto d = parseDuration(*ttl, &ttlWhy);
        if (!d) {
            fail(why, "ttl " + ttlWhy);
            return std::nullopt;
        }
        in.expiresAt = now + *d;
    }
    return in;
}

} // namespace Floodgate::Wire::Codec
