// SPDX-License-Identifier: GPL-3.0-or-later
// The cluster key (docs/CLUSTER.md, "Who may change the shared state"): 32
// random bytes that every node of one cluster reads from a file of its own
// (`--cluster-key FILE`) and that never goes to Redis. Every shared change a
// node writes (a list entry, a tier, a customer, the rules, a ban, a
// cooldown) carries a tag made with it, and a node applies nothing whose tag
// does not verify: whoever can write to Redis can disturb counts, but
// cannot block, safelist or edit anything. The hash key that names
// customers and header values in Redis is derived from it too, so Redis
// does not hold that either.
#pragma once

#include "core/Hash.h"

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace Floodgate::Cluster {

class ClusterKey {
public:
    static constexpr std::size_t Bytes = 32;

    // Reads a key file: one line, the key in base64 (44 characters), as
    // `floodgate cluster-key FILE` writes it. nullopt with one line naming
    // the file and what is wrong (missing, unreadable, not a key).
    static std::optional<ClusterKey> load(const std::string& path, std::string* error);
    // A new key from the system's random source, written to `path` (mode
    // 0600, never over an existing file). False with one line saying why.
    static bool create(const std::string& path, std::string* error);
    static std::optional<ClusterKey> fromBase64(std::string_view text);

    // HMAC-SHA-256 of `message`, its first 16 bytes as 32 hex digits: the tag
    // a shared change carries (SharedRecord.h).
    std::string tag(std::string_view message) const;
    // The hash key for customers and header values, the same on every node.
    Core::SipKey sipKey() const;
    // A value that names the key without revealing it (an HMAC of a fixed
    // text): the cluster keeps the first node's, and a node with another
    // key is refused. fingerprint() is its first 8 hex digits, shown in the
    // start-up line and in that refusal.
    std::string check() const;
    std::string fingerprint() const { return check().substr(0, 8); }

private:
    std::array<unsigned char, Bytes> m_key{};
};

} // namespace Floodgate::Cluster
