// SPDX-License-Identifier: GPL-3.0-or-later
// Customers' API keys (docs/INTERFACE.md, "Customers prove who they are"):
// making one, and the digest a presented key is looked up by.
//
// A key is "fgk_" and 43 characters of base64url: 32 random bytes from
// OpenSSL's generator, so it cannot be guessed, and the first 12 characters
// (its id, Core::CustomerKey::id) tell keys apart in lists and events
// without proving anything. Only its SHA-256 is stored: with 256 random
// bits a fast hash is as good as a slow one (nobody can search the space),
// and it costs the request path about a microsecond, only when a key is sent.
#pragma once

#include "core/Rules.h"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace Floodgate::Core {

inline constexpr std::string_view CustomerKeyPrefix = "fgk_";
inline constexpr std::size_t CustomerKeyLength = 4 + 43;
inline constexpr std::size_t CustomerKeyIdLength = 12;
// A longer header value is no key: refused without hashing it.
inline constexpr std::size_t MaxPresentedKeyLength = 200;

using KeyDigest = std::array<std::uint8_t, 32>;

struct KeyDigestHash {
    std::size_t operator()(const KeyDigest& d) const noexcept
    {
        std::uint64_t w;  // already uniformly random: its first word will do
        static_assert(sizeof w <= sizeof(KeyDigest));
        __builtin_memcpy(&w, d.data(), sizeof w);
        return std::size_t(w);
    }
};

// A new key: the secret to show once, and what is stored of it.
struct NewCustomerKey {
    std::string secret;  // "fgk_..."
    CustomerKey key;     // id, sha256, createdAt = now, no expiry
};

// 32 bytes from OpenSSL's generator; nullopt if it failed (never in practice).
std::optional<NewCustomerKey> makeCustomerKey(Millis now);
// The key made of these 32 bytes (the demo derives its customers' keys).
NewCustomerKey customerKeyFrom(std::span<const std::uint8_t, 32> bytes, Millis now);

// SHA-256 of what a request presented.
KeyDigest keyDigest(std::string_view presented);
std::string toHex(const KeyDigest& digest);
// 64 lowercase hex digits; nullopt otherwise.
std::optional<KeyDigest> digestFromHex(std::string_view hex);

} // namespace Floodgate::Core
