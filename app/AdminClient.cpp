// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/AdminClient.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <sys/socket.h>
#include <sys/time.h>

namespace Floodgate::App {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;

std::optional<AdminAnswer> adminGet(const HostPort& at, const std::string& target, const std::string& token, std::string* why)
{
    try {
        asio::io_context io;
        tcp::socket socket(io);
        const tcp::endpoint endpoint(asio::ip::make_address(at.host), at.port);
        socket.connect(endpoint);
        // A stuck instance must not hang the command: every read and write
        // gives up after 10 s (the API answers in milliseconds).
        const timeval limit{10, 0};
        ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
        ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
        http::request<http::empty_body> request{http::verb::get, target, 11};
        request.set(http::field::host, endpoint.address().is_v6() ? "[" + at.host + "]:" + std::to_string(at.port)
                                                                  : at.host + ":" + std::to_string(at.port));
        request.set(http::field::authorization, "Bearer " + token);
        request.set(http::field::connection, "close");
        http::write(socket, request);
        boost::beast::flat_buffer buffer;
        http::response_parser<http::string_body> parser;
        parser.body_limit(64 * 1024 * 1024);
        http::read(socket, buffer, parser);
        boost::system::error_code ignored;
        socket.shutdown(tcp::socket::shutdown_both, ignored);
        return AdminAnswer{int(parser.get().result_int()), std::move(parser.get().body())};
    } catch (const boost::system::system_error& e) {
        if (why)
            *why = e.code().message();
        return std::nullopt;
    }
}

} // namespace Floodgate::App
