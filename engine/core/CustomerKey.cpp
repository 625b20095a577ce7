// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/CustomerKey.h"

#include "core/Hash.h"
#include "core/Target.h"

#include <openssl/evp.h>
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
    // OpenSSL 3's one-shot SHA256() looks the algorithm up on every call
    // (about 300 ns here, more than the hashing): fetched once, and one
    // context per thread, reused.
    static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    struct Context {
        EVP_MD_CTX* ctx = EVP_MD_CTX_new();
        ~Context() { EVP_MD_CTX_free(ctx); }
    };
    thread_local Context context;
    KeyDigest d{};
    unsigned int length = 0;
    if (!sha256 || !context.ctx || EVP_DigestInit_ex2(context.ctx, sha256, nullptr) != 1
        || EVP_DigestUpdate(context.ctx, presented.data(), presented.size()) != 1 || EVP_DigestFinal_ex(context.ctx, d.data(), &length) != 1)
        SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), d.data());  // the slow way, never in practice
    return d;
}

std::string toHex(const KeyDigest& digest)
{
    return toHex(std::span<const std::uint8_t>(digest));
}

std::optional<KeyDigest> digestFromHex(std::string_view hex)
{
    if (hex.size() != 64)
        return std::nullopt;
    KeyDigest d{};
    for (std::size_t i = 0; i < d.size(); ++i) {
        const char h = hex[2 * i], l = hex[2 * i + 1];
        const int hi = hexValue(h);
        const int lo = hexValue(l);
        if (hi < 0 || lo < 0 || (h >= 'A' && h <= 'F') || (l >= 'A' && l <= 'F'))  // lowercase only: one spelling a digest
            return std::nullopt;
        d[i] = std::uint8_t(hi << 4 | lo);
    }
    return d;
}

} // namespace Floodgate::Core
