// SPDX-License-Identifier: MIT
// Small pieces the two servers (traffic listener, admin listener) share:
// the peer of a socket as a Core address, and the clock their connection
// deadlines are measured on. Internal to engine/http: included by .cpp
// files only, so Boost stays out of the public headers.
#pragma once

#include "Address.h"
#include "Time.h"

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <chrono>

namespace Floodgate::Http {

// ::ffff:a.b.c.d arrives as IPv6 on a dual-stack socket; Core::IpAddress
// treats it as the IPv4 address it is.
inline Core::IpAddress toIp(const boost::asio::ip::address& a)
{
    if (a.is_v4())
        return Core::IpAddress::fromV4(a.to_v4().to_uint());
    const auto b = a.to_v6().to_bytes();
    Core::IpAddress::Bytes bytes;
    std::copy(b.begin(), b.end(), bytes.begin());
    return Core::IpAddress(bytes);
}

// Connection deadlines: a monotonic clock, never the wall clock.
inline Core::Millis steadyMs()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace Floodgate::Http
