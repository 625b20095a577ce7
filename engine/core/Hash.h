// SPDX-License-Identifier: MIT
// Small, fast, well-mixed hashes for the engine's tables (not for security:
// keys are attacker-chosen, so every table also bounds its probe work by its
// load factor, and the seed is per process).
#pragma once

#include "Address.h"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace Floodgate::Core {

// The finaliser of splitmix64 / murmur3: every input bit affects every output bit.
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
    return mix64(a ^ mix64(b + processHashSeed()) ^ mix64(c * 0x9e3779b97f4a7c15ULL + 1));
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

// FNV-1a over the bytes, then mixed; for strings (customer ids, user keys, header values).
inline std::uint64_t hashString(std::string_view s, std::uint64_t salt = 0)
{
    std::uint64_t h = 0xcbf29ce484222325ULL ^ salt;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return mix64(h ^ processHashSeed());
}

} // namespace Floodgate::Core
