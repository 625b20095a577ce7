// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/CustomerKey.h"

#include <openssl/rand.h>
#include <openssl/sha.h>

namespace Floodgate::Core {

namespace {

// RFC 4648 section 5, without padding: safe in a header, a URL and a shell.
std::string base64Url(std::span<const std::uint8_t> bytes)
{
    static constexpr char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    std::uint32_t bits = 0;
    int held = 0;
    for (std::uint8_t b : bytes) {
        bits = (bits << 8) | b;
        held += 8;
        while (held >= 6) {
            held -= 6;
            out += ALPHABET[(bits >> held) & 63];
        }
    }
    if (held > 0)
        out += ALPHABET[(bits << (6 - held)) & 63];
    return out;
}

int hexValue(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

} // namespace

NewCustomerKey customerKeyFrom(std::span<const std::uint8_t, 32> bytes, Millis now)
{
    NewCustomerKey k;
    k.secret = std::string(CustomerKeyPrefix) + base64Url(bytes);
    k.key.id = k.secret.substr(0, CustomerKeyIdLength);
    k.key.sha256 = toHex(keyDigest(k.secret));
    k.key.createdAt = now;
    return k;
}

std::optional<NewCustomerKey> makeCustomerKey(Millis now)
{
    std::array<std::uint8_t, 32> bytes{};
    if (RAND_bytes(bytes.data(), int(bytes.size())) != 1)
        return std::nullopt;
    return customerKeyFrom(bytes, now);
}

KeyDigest keyDigest(std::string_view presented)
{
    KeyDigest d{};
    SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), d.data());
    return d;
}

std::string toHex(const KeyDigest& digest)
{
    static constexpr char DIGITS[] = "0123456789abcdef";
    std::string out;
    out.reserve(64);
    for (std::uint8_t b : digest) {
        out += DIGITS[b >> 4];
        out += DIGITS[b & 15];
    }
    return out;
}

std::optional<KeyDigest> digestFromHex(std::string_view hex)
{
    if (hex.size() != 64)
        return std::nullopt;
    KeyDigest d{};
    for (std::size_t i = 0; i < d.size(); ++i) {
        const int hi = hexValue(hex[2 * i]);
        const int lo = hexValue(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return std::nullopt;
        d[i] = std::uint8_t(hi << 4 | lo);
    }
    return d;
}

} // namespace Floodgate::Core
