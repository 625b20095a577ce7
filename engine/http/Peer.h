// SPDX-License-Identifier: GPL-3.0-or-later
// The peer of a socket as a Core address, for both servers (traffic
// listener, admin listener); their deadlines are in Deadlines.h. Internal
// to engine/http: included by .cpp files only, so Boost stays out of the
// public headers.
#pragma once

#include "core/Address.h"

#include <boost/asio/ip/address.hpp>

#include <algorithm>

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

} // namespace Floodgate::Http
