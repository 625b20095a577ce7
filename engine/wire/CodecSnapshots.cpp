// SPDX-License-Identifier: GPL-3.0-or-later
// What the engine shows of its clients and buckets, as JSON (the admin API, the console).
#include "wire/Codec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace Floodgate::Wire::Codec {

using namespace Core;

Json toJson(const ClientSummary& s, Millis now)
{
    Json j = Json::object();
    j.set("address", s.keyText());
    j.set("last_address", s.lastAddress ? Json(s.lastAddress->toString()) : Json());
    j.set("state", toString(s.state));
    j.set("customer", s.customer.empty() ? Json() : Json(s.customer));
    j.set("rate", std::round(s.ratePerSecond * 100.0) / 100.0);
    j.set("last_3s", s.lastBucket);
    j.set("last_60s", s.last60s);
    if (s.bindingLimit) {
        Json b = Json::object();
        b.set("rule", s.bindingRule);
        b.set("used", s.bindingUsed);
        b.set("limit", s.bindingLimit);
        b.set("remaining", s.bindingUsed >= s.bindingLimit ? 0u : s.bindingLimit - s.bindingUsed);
        j.set("binding", std::move(b));
    } else {
        j.set("binding", Json());
    }
    j.set("retry_after", s.retryAfterMs > 0 ? Json(retryAfterSeconds(s.retryAfterMs)) : Json());
    j.set("retry_after_ms", s.retryAfterMs > 0 ? Json(s.retryAfterMs) : Json());
    j.set("last_seen", s.lastSeen ? Json(formatTime(s.lastSeen)) : Json());
    j.set("idle_ms", s.lastSeen ? Json(std::max<Millis>(0, now - s.lastSeen)) : Json());
    Json live = Json::array();
    for (auto v : s.live)
        live.push(v);
    j.set("live", std::move(live));
    j.set("live_complete", s.liveComplete);
    return j;
}

Json toJson(const ClientDetail& d, Millis now)
{
    Json j = toJson(d.summary, now);
    Json levels = Json::array();
    for (const LevelUsage& u : d.levels) {
        Json l = Json::object();
        l.set("name", u.name);
        l.set("algorithm", toString(u.algorithm));
        l.set("limit", u.limit);
        l.set("period", seconds(u.periodMs));
        l.set("used", u.used);
        l.set("used_here", u.usedHere);
        l.set("remaining", u.remaining);
        l.set("reset", secondsRoundedUp(u.resetMs));
        l.set("reset_ms", u.resetMs);
        l.set("refusing", u.refusing);
        l.set("retry_after_ms", u.retryAfterMs);
        Json buckets = Json::array();
        for (const BucketView& b : u.buckets) {
            Json bj = Json::object();
            bj.set("start", formatTime(b.startMs));
            bj.set("count", b.count);
            buckets.push(std::move(bj));
        }
        l.set("buckets", std::move(buckets));
        levels.push(std::move(l));
    }
    j.set("levels", std::move(levels));
    j.set("list_entry", d.listEntry && d.listKind ? toJson(*d.listEntry, *d.listKind, now) : Json());
    return j;
}

Json toJson(const LiveBuckets& lb)
{
    Json j = Json::object();
    j.set("bucket_seconds", seconds(lb.bucketMs));
    j.set("keys", lb.keys);
    Json buckets = Json::array();
    for (const LiveBucket& b : lb.buckets) {
        Json o = Json::object();
        o.set("start", formatTime(b.startMs));
        o.set("total", b.total);
        Json top = Json::array();
        for (const auto& [range, count] : b.top) {
            Json t = Json::object();
            t.set("address", keyText(range));
            t.set("count", count);
            top.push(std::move(t));
        }
        o.set("top", std::move(top));
        buckets.push(std::move(o));
    }
    j.set("buckets", std::move(buckets));
    return j;
}

} // namespace Floodgate::Wire::Codec
