// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/Hash.h"

#include <atomic>

#include <array>
#include <bit>
#include <chrono>
#include <random>

#if __has_include(<sys/random.h>)
#include <sys/random.h>
#define FLOODGATE_HAVE_GETRANDOM 1
#endif

namespace Floodgate::Core {

namespace {

// 16 bytes from the operating system: getrandom(2) where there is one,
// std::random_device otherwise (or if getrandom fails, which it should not).
std::array<std::uint64_t, 2> osRandom128()
{
    std::array<std::uint64_t, 2> out{};
#ifdef FLOODGATE_HAVE_GETRANDOM
    std::size_t got = 0;
    auto* bytes = reinterpret_cast<unsigned char*>(out.data());
    while (got < sizeof out) {
        const ssize_t n = getrandom(bytes + got, sizeof out - got, 0);
        if (n <= 0)
            break;
        got += std::size_t(n);
    }
    if (got == sizeof out)
        return out;
#endif
    std::random_device rd;
    for (auto& w : out)
        w = (std::uint64_t(rd()) << 32) ^ rd();
    return out;
}

std::uint64_t load64le(const unsigned char* p)
{
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = (v << 8) | p[i];
    return v;
}

struct SipState {
    std::uint64_t v0, v1, v2, v3;

    void round()
    {
        v0 += v1;
        v1 = std::rotl(v1, 13);
        v1 ^= v0;
        v0 = std::rotl(v0, 32);
        v2 += v3;
        v3 = std::rotl(v3, 16);
        v3 ^= v2;
        v0 += v3;
        v3 = std::rotl(v3, 21);
        v3 ^= v0;
        v2 += v1;
        v1 = std::rotl(v1, 17);
        v1 ^= v2;
        v2 = std::rotl(v2, 32);
    }
    void compress(std::uint64_t m)
    {
        v3 ^= m;
        round();  // c = 2
        round();
        v0 ^= m;
    }
    void finalRounds()
    {
        round();  // d = 4
        round();
        round();
        round();
    }
    std::uint64_t word() const { return v0 ^ v1 ^ v2 ^ v3; }
};

// Initialisation and message compression, shared by both output widths.
SipState absorb(const SipKey& key, std::string_view data, bool wide)
{
    // SipHash's initialisation constants: "somepseudorandomlygeneratedbytes" in ASCII.
    SipState s{key.k0 ^ 0x736f6d6570736575ULL, key.k1 ^ 0x646f72616e646f6dULL, key.k0 ^ 0x6c7967656e657261ULL,
               key.k1 ^ 0x7465646279746573ULL};
    if (wide)
        s.v1 ^= 0xee;
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    const std::size_t n = data.size();
    const std::size_t whole = n & ~std::size_t(7);
    for (std::size_t i = 0; i < whole; i += 8)
        s.compress(load64le(p + i));
    // The last block: the remaining bytes, and the length's low byte on top.
    std::uint64_t last = std::uint64_t(n & 0xff) << 56;
    for (std::size_t i = whole; i < n; ++i)
        last |= std::uint64_t(p[i]) << (8 * (i - whole));
    s.compress(last);
    s.v2 ^= wide ? 0xee : 0xff;
    s.finalRounds();
    return s;
}

} // namespace

std::uint64_t sipHash64(const SipKey& key, std::string_view data)
{
    return absorb(key, data, false).word();
}

Hash128 sipHash128(const SipKey& key, std::string_view data)
{
    SipState s = absorb(key, data, true);
    Hash128 out;
    out.lo = s.word();
    s.v1 ^= 0xdd;
    s.finalRounds();
    out.hi = s.word();
    return out;
}

namespace {

// Two words read without a lock on every keyed hash; replaced (rarely, when
// a node joins its cluster) by adoptSipKey. A hash taken while the key
// changes may use one old word and one new one: that request's key is
// wrong once, as it would be with the old key, and nothing else.
struct SharedSipKey {
    std::atomic<std::uint64_t> k0;
    std::atomic<std::uint64_t> k1;
    SharedSipKey()
    {
        const auto r = osRandom128();
        k0.store(r[0], std::memory_order_relaxed);
        k1.store(r[1], std::memory_order_relaxed);
    }
};

SharedSipKey& sipKeyStorage()
{
    static SharedSipKey key;
    return key;
}

} // namespace

SipKey processSipKey()
{
    const SharedSipKey& k = sipKeyStorage();
    return SipKey{k.k0.load(std::memory_order_relaxed), k.k1.load(std::memory_order_relaxed)};
}

void adoptSipKey(const SipKey& key)
{
    SharedSipKey& k = sipKeyStorage();
    k.k0.store(key.k0, std::memory_order_relaxed);
    k.k1.store(key.k1, std::memory_order_relaxed);
}

std::uint64_t processHashSeed()
{
    // Per process, so an attacker cannot precompute keys that crowd one
    // index position in our tables from reading the source.
    static const std::uint64_t seed = [] {
        const auto r = osRandom128();
        return mix64(r[0] ^ std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count())) ^ r[1];
    }();
    return seed;
}

std::string toHex(std::span<const std::uint8_t> bytes)
{
    static constexpr char DIGITS[] = "0123456789abcdef";
    std::string out(2 * bytes.size(), '0');
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        out[2 * i] = DIGITS[bytes[i] >> 4];
        out[2 * i + 1] = DIGITS[bytes[i] & 15];
    }
    return out;
}

} // namespace Floodgate::Core
