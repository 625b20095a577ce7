// SPDX-License-Identifier: GPL-3.0-or-later
// Hashes for the engine's tables.
//
// Two kinds, for two jobs:
// - mix64 / hashWords / hashAddress: a cheap mixer that only places keys in
//   a table's index. The keys themselves are compared whole (an address is
//   its exact 16 bytes), so a collision here costs a probe, never a merge;
//   every table bounds its probe work by its load factor, and the seed is
//   per process.
// - sipHash64 / sipHash128: SipHash-2-4, a keyed pseudo-random function, for
//   strings that become keys themselves (API keys and other header values,
//   user ids, user agents, paths). Without the per-process secret key an
//   attacker cannot construct two strings that share a counter; with the
//   128-bit output, even a blind search needs about 2^64 tries.
#pragma once

#include "core/Address.h"

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace Floodgate::Core {

// 2^64 divided by the golden ratio, odd: multiplying by it spreads
// consecutive integers over the whole word (splitmix64's increment, Knuth's
// multiplicative hashing).
inline constexpr std::uint64_t GOLDEN_GAMMA = 0x9e3779b97f4a7c15ULL;
// xxHash64's second prime: a second odd multiplier unrelated to the first.
inline constexpr std::uint64_t XXH_PRIME64_2 = 0xc2b2ae3d27d4eb4fULL;

// The finaliser of splitmix64 / murmur3: every input bit affects every output
// bit. Its two multipliers are splitmix64's published constants.
constexpr std::uint64_t mix64(std::uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

std::uint64_t processHashSeed();

inline std::uint64_t hashWords(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0)
{
    return mix64(a ^ mix64(b + processHashSeed()) ^ mix64(c * GOLDEN_GAMMA + 1));
}

inline std::uint64_t hashAddress(const IpAddress& a)
{
    // Byte order does not matter for a hash: copy the words as they lie.
    std::uint64_t w[2];
    std::memcpy(w, a.bytes().data(), sizeof w);
    return hashWords(w[0], w[1]);
}

// For maps keyed by range (list entries by their address and prefix).
struct CidrHash {
    std::size_t operator()(const Cidr& c) const
    {
        std::uint64_t w[2];
        std::memcpy(w, c.address().bytes().data(), sizeof w);
        return std::size_t(hashWords(w[0], w[1], std::uint64_t(c.prefix128())));
    }
};

// ---- SipHash-2-4 (Aumasson and Bernstein, 2012) ----------------------------

// A 128-bit SipHash key: k0 is bytes 0-7 of the key read little-endian, k1 bytes 8-15.
struct SipKey {
    std::uint64_t k0 = 0;
    std::uint64_t k1 = 0;
};

// The two halves of a 128-bit SipHash output: `lo` is bytes 0-7 of the
// output read little-endian, `hi` bytes 8-15.
struct Hash128 {
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    friend bool operator==(const Hash128&, const Hash128&) = default;
};

std::uint64_t sipHash64(const SipKey& key, std::string_view data);
Hash128 sipHash128(const SipKey& key, std::string_view data);

// The secret key of this process: 128 bits from the operating system's
// random source, drawn once. Never written anywhere, so counters keyed by it
// do not outlive the process (they do not: the key table is in memory).
// Nodes of one cluster share theirs instead (adoptSipKey), so an API key or a
// customer id names the same counter in Redis on every node.
SipKey processSipKey();
// Replaces the key (the cluster's, docs/CLUSTER.md). Entries keyed by the old
// one are not found again; the engine recompiles its keys after this.
void adoptSipKey(const SipKey& key);

// The keyed hashes of this process.
inline std::uint64_t keyedHash64(std::string_view s)
{
    return sipHash64(processSipKey(), s);
}
inline Hash128 keyedHash128(std::string_view s)
{
    return sipHash128(processSipKey(), s);
}

// Bytes as lowercase hex digits, two a byte (a digest, a fingerprint).
std::string toHex(std::span<const std::uint8_t> bytes);

// Compares two secrets (a token, a tag) in a time that depends only on
// their length, so how fast a wrong guess is refused tells nothing.
inline bool constantTimeEquals(std::string_view a, std::string_view b)
{
    if (a.size() != b.size())
        return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

} // namespace Floodgate::Core
