// SPDX-License-Identifier: GPL-3.0-or-later
#include "cluster/SharedRecord.h"

#include <charconv>

namespace Floodgate::Cluster {

namespace {

constexpr std::string_view TAG_CONTEXT = "floodgate shared change 1";
constexpr std::size_t TAG_CHARS = 32;

void lengthPrefixed(std::string& out, std::string_view s)
{
    out += std::to_string(s.size());
    out += ':';
    out += s;
    out += ';';
}

// What the tag covers: every part of the change, each with its length, so
// no two changes read the same.
std::string tagged(std::string_view collection, std::string_view key, bool removed, const Stamp& stamp, std::string_view actor, std::string_view value)
{
    std::string m;
    m.reserve(64 + collection.size() + key.size() + stamp.node.size() + actor.size() + value.size());
    lengthPrefixed(m, TAG_CONTEXT);
    lengthPrefixed(m, collection);
    lengthPrefixed(m, key);
    lengthPrefixed(m, removed ? "del" : "put");
    lengthPrefixed(m, std::to_string(stamp.at));
    lengthPrefixed(m, stamp.node);
    lengthPrefixed(m, actor);
    lengthPrefixed(m, value);
    return m;
}

// Reads "<digits>" up to `end` at `at`, moving past the terminator.
std::optional<std::int64_t> number(std::string_view text, std::size_t& at, char end)
{
    std::int64_t v = 0;
    const char* b = text.data() + at;
    const auto r = std::from_chars(b, text.data() + text.size(), v);
    if (r.ec != std::errc() || r.ptr == b || r.ptr == text.data() + text.size() || *r.ptr != end || v < 0)
        return std::nullopt;
    at = std::size_t(r.ptr - text.data()) + 1;
    return v;
}

// "<n>:<n bytes>;"
std::optional<std::string_view> counted(std::string_view text, std::size_t& at)
{
    const auto n = number(text, at, ':');
    if (!n || std::size_t(*n) >= text.size() - at || text[at + std::size_t(*n)] != ';')
        return std::nullopt;
    const std::string_view s = text.substr(at, std::size_t(*n));
    at += std::size_t(*n) + 1;
    return s;
}

} // namespace

bool newer(const Stamp& a, const Stamp& b)
{
    return a.at != b.at ? a.at > b.at : a.node > b.node;
}

std::string encodeRecord(const SharedChange& c, const ClusterKey& key)
{
    std::string out = std::to_string(c.stamp.at);
    out += ';';
    lengthPrefixed(out, c.stamp.node);
    out += c.removed ? "del;" : "put;";
    lengthPrefixed(out, c.actor);
    const std::string_view value = c.removed ? std::string_view() : std::string_view(c.value);
    out += key.tag(tagged(c.collection, c.key, c.removed, c.stamp, c.actor, value));
    out += ';';
    out += value;
    return out;
}

std::optional<SharedChange> decodeRecord(std::string_view collection, std::string_view key, std::string_view text, const ClusterKey& clusterKey,
                                         std::string* why)
{
    SharedChange c;
    c.collection = collection;
    c.key = key;
    c.origin = Origin::Cluster;
    std::size_t at = 0;
    const auto stampAt = number(text, at, ';');
    const auto node = stampAt ? counted(text, at) : std::nullopt;
    if (!node || node->empty() || text.size() - at < 4) {
        *why = "not a shared change of Floodgate's";
        return std::nullopt;
    }
    const std::string_view op = text.substr(at, 4);
    if (op != "put;" && op != "del;") {
        *why = "not a shared change of Floodgate's";
        return std::nullopt;
    }
    at += 4;
    const auto actor = counted(text, at);
    if (!actor || text.size() - at < TAG_CHARS + 1 || text[at + TAG_CHARS] != ';') {
        *why = "not a shared change of Floodgate's";
        return std::nullopt;
    }
    const std::string_view tag = text.substr(at, TAG_CHARS);
    const std::string_view value = text.substr(at + TAG_CHARS + 1);
    c.removed = op == "del;";
    c.stamp = Stamp{*stampAt, std::string(*node)};
    c.actor = std::string(*actor);
    if (c.removed && !value.empty()) {
        *why = "a removal that carries a value";
        return std::nullopt;
    }
    if (!Core::constantTimeEquals(clusterKey.tag(tagged(collection, key, c.removed, c.stamp, c.actor, value)), tag)) {
        *why = "its tag does not verify (not written by a node holding this cluster's key, or changed in Redis since)";
        return std::nullopt;
    }
    c.value = std::string(value);
    return c;
}

} // namespace Floodgate::Cluster
