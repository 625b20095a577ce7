// SPDX-License-Identifier: GPL-3.0-or-later
// IP addresses as 16 bytes (IPv4 mapped into IPv6, ::ffff:a.b.c.d), CIDR
// ranges over them, parsing that says why it refused, RFC 5952 output.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace Floodgate::Core {

class IpAddress {
public:
    using Bytes = std::array<std::uint8_t, 16>;

    constexpr IpAddress() = default;  // :: (unspecified)
    constexpr explicit IpAddress(const Bytes& b) : m_bytes(b) {}
    static IpAddress fromV4(std::uint32_t hostOrder);

    // Parses "203.0.113.7", "2001:db8::1", "::ffff:1.2.3.4", "[2001:db8::1]".
    // On failure, returns nullopt and sets *why (if given) to a reason a person
    // can act on.
    static std::optional<IpAddress> parse(std::string_view text, std::string* why = nullptr);

    bool isV4() const;  // true for ::ffff:a.b.c.d
    std::uint32_t v4() const;  // host order; only meaningful when isV4()
    bool isLoopback() const;
    const Bytes& bytes() const { return m_bytes; }
    std::uint64_t hi() const;  // first 8 bytes, big-endian
    std::uint64_t lo() const;  // last 8 bytes, big-endian

    // Keeps the first `bits` bits (0..128, in the 128-bit space) and zeroes the rest.
    IpAddress masked(int bits) const;

    // Dotted quad for IPv4, RFC 5952 for IPv6 (lower case, longest run of
    // zero groups of length >= 2 compressed, leftmost on a tie).
    std::string toString() const;
    // The same text written into `out`, which has room for maxTextLength
    // bytes; returns its length. No allocation, no printf: the proxy writes
    // the peer into every request it forwards.
    static constexpr std::size_t maxTextLength = 39;  // eight groups of four hex digits and seven colons
    std::size_t format(char* out) const;
    void appendTo(std::string& out) const;

    friend constexpr bool operator==(const IpAddress&, const IpAddress&) = default;
    friend constexpr auto operator<=>(const IpAddress&, const IpAddress&) = default;

private:
    Bytes m_bytes{};
};

// A range: an address and a prefix length in the 128-bit space (IPv4 /p is
// stored as 96 + p), with the host bits zeroed.
class Cidr {
public:
    constexpr Cidr() = default;
    Cidr(const IpAddress& address, int prefixBits128);  // masks the address

    // "10.0.0.0/8", "2001:db8::/48", a bare address (= /32 or /128).
    // Host bits set in the text ("10.1.2.3/8") are accepted and cleared, as
    // iptables does; an out-of-range prefix is an error.
    static std::optional<Cidr> parse(std::string_view text, std::string* why = nullptr);

    const IpAddress& address() const { return m_address; }
    int prefix128() const { return m_prefix; }
    // The prefix as the operator wrote it: 0..32 for IPv4, 0..128 for IPv6.
    int prefixLength() const;
    bool isV4() const { return m_address.isV4() && m_prefix >= 96; }
    bool contains(const IpAddress& a) const { return a.masked(m_prefix) == m_address; }
    bool isSingleAddress() const { return m_prefix == 128; }

    // "203.0.113.7/32", "2001:db8::/48".
    std::string toString() const;

    friend constexpr bool operator==(const Cidr&, const Cidr&) = default;
    friend constexpr auto operator<=>(const Cidr&, const Cidr&) = default;

private:
    IpAddress m_address;
    int m_prefix = 0;
};

// The counting key of a client: IPv4 as it is (optionally a shorter prefix),
// IPv6 cut to its counting prefix (default /64) so rotating addresses inside
// one allocation gains nothing.
IpAddress countingKey(const IpAddress& client, int ipv6PrefixBits, int ipv4PrefixBits = 32);

} // namespace Floodgate::Core
