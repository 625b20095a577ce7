// SPDX-License-Identifier: MIT
#include <utility>  // before Asio (Boost 1.74 + GCC 12)

#include "AdminServer.h"

#include "Json.h"
#include "Responses.h"
#include "Rules.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <thread>

namespace Floodgate::Http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;

std::string AdminRequest::header(std::string_view name) const
{
    for (const auto& [n, v] : headers)
        if (Core::equalsIgnoreCase(n, name))
            return v;
    return {};
}

struct AdminServer::Impl {
    AdminOptions options;
    Handler handler;
    net::io_context ioc{1};
    tcp::acceptor acceptor{ioc};
    std::thread thread;
    std::uint16_t port = 0;
    bool loopback = true;
    std::atomic<int> connections{0};
    bool started = false;

    void accept();
};

namespace {

class AdminSession : public std::enable_shared_from_this<AdminSession> {
public:
    AdminSession(AdminServer::Impl& server, tcp::socket socket) : m_server(server), m_stream(std::move(socket))
    {
        ++m_server.connections;
    }
    ~AdminSession() { --m_server.connections; }

    void read()
    {
        m_parser.emplace();
        m_parser->header_limit(16 * 1024);
        m_parser->body_limit(m_server.options.bodyLimitBytes);
        m_stream.expires_after(std::chrono::seconds(30));
        http::async_read(m_stream, m_buffer, *m_parser, [self = shared_from_this()](error_code ec, std::size_t) { self->onRead(ec); });
    }

private:
    void onRead(error_code ec)
    {
        if (ec == http::error::end_of_stream || ec == net::error::operation_aborted || ec == beast::error::timeout) {
            close();
            return;
        }
        if (ec) {
            const int status = ec == http::error::body_limit ? 413 : (ec == http::error::header_limit ? 431 : 400);
            AdminResponse r;
            r.status = status;
            r.contentType = "application/json";
            r.body = status == 413 ? "{\"error\":\"body: the request body is too large\"}\n"
                                   : "{\"error\":\"request: malformed HTTP request\"}\n";
            write(r, false);
            return;
        }
        const auto& req = m_parser->get();
        AdminRequest ar;
        ar.method = std::string(req.method_string());
        ar.target = std::string(req.target());
        const auto q = ar.target.find('?');
        ar.path = ar.target.substr(0, q);
        ar.query = q == std::string::npos ? std::string() : ar.target.substr(q + 1);
        for (const auto& f : req)
            ar.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
        ar.body = req.body();
        error_code ignored;
        const auto ep = m_stream.socket().remote_endpoint(ignored);
        if (!ignored)
            ar.peer = ep.address().is_v4() ? Core::IpAddress::fromV4(ep.address().to_v4().to_uint()) : [&] {
                const auto b = ep.address().to_v6().to_bytes();
                Core::IpAddress::Bytes bytes;
                std::copy(b.begin(), b.end(), bytes.begin());
                return Core::IpAddress(bytes);
            }();
        AdminResponse r;
        try {
            r = m_server.handler(ar);
        } catch (const std::exception& e) {
            r.status = 500;
            r.contentType = "application/json";
            r.body = "{\"error\":";
            Core::appendJsonString(r.body, std::string("internal: ") + e.what());
            r.body += "}\n";
        }
        write(r, req.keep_alive(), req.method() == http::verb::head);
    }

    // HEAD: the same headers (Content-Length included), no body.
    void write(const AdminResponse& r, bool keepAlive, bool head = false)
    {
        m_out.clear();
        m_out += "HTTP/1.1 ";
        m_out += std::to_string(r.status);
        m_out += ' ';
        m_out += reasonPhrase(r.status);
        m_out += "\r\n";
        if (r.status != 204) {
            m_out += "Content-Type: ";
            m_out += r.contentType;
            m_out += "\r\nContent-Length: ";
            m_out += std::to_string(r.body.size());
            m_out += "\r\n";
        }
        m_out += "Cache-Control: no-store\r\n";
        for (const auto& [k, v] : r.headers) {
            m_out += k;
            m_out += ": ";
            m_out += v;
            m_out += "\r\n";
        }
        if (!keepAlive)
            m_out += "Connection: close\r\n";
        m_out += "\r\n";
        if (r.status != 204 && !head)
            m_out += r.body;
        m_keepAlive = keepAlive;
        m_stream.expires_after(std::chrono::seconds(30));
        net::async_write(m_stream, net::buffer(m_out), [self = shared_from_this()](error_code ec, std::size_t) {
            if (ec || !self->m_keepAlive) {
                self->close();
                return;
            }
            self->read();
        });
    }

    void close()
    {
        error_code ec;
        m_stream.socket().shutdown(tcp::socket::shutdown_both, ec);
        m_stream.close();
    }

    AdminServer::Impl& m_server;
    beast::tcp_stream m_stream;
    beast::flat_buffer m_buffer;
    std::optional<http::request_parser<http::string_body>> m_parser;
    std::string m_out;
    bool m_keepAlive = true;
};

} // namespace

void AdminServer::Impl::accept()
{
    acceptor.async_accept(ioc, [this](error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted)
            return;
        if (!ec) {
            if (std::size_t(connections.load()) >= options.maxConnections) {
                error_code ignored;
                socket.close(ignored);
            } else {
                std::make_shared<AdminSession>(*this, std::move(socket))->read();
            }
            accept();
            return;
        }
        // Out of descriptors or similar: try again shortly, keep the port.
        auto timer = std::make_shared<net::steady_timer>(ioc, std::chrono::milliseconds(100));
        timer->async_wait([this, timer](error_code e) {
            if (!e)
                accept();
        });
    });
}

AdminServer::AdminServer(AdminOptions options, Handler handler) : m(std::make_unique<Impl>())
{
    m->options = std::move(options);
    m->handler = std::move(handler);
}

AdminServer::~AdminServer()
{
    stop();
}

bool AdminServer::start(std::string* error)
{
    error_code ec;
    const auto address = net::ip::make_address(m->options.address, ec);
    if (ec) {
        if (error)
            *error = "\"" + m->options.address + "\" is not an IP address to listen on";
        return false;
    }
    m->loopback = address.is_loopback();
    const tcp::endpoint endpoint(address, m->options.port);
    m->acceptor.open(endpoint.protocol(), ec);
    if (!ec)
        m->acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec)
        m->acceptor.bind(endpoint, ec);
    if (!ec)
        m->acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
        if (error)
            *error = "cannot listen on " + m->options.address + ":" + std::to_string(m->options.port) + ": " + ec.message();
        return false;
    }
    m->port = m->acceptor.local_endpoint().port();
    m->accept();
    m->thread = std::thread([this] { m->ioc.run(); });
    m->started = true;
    return true;
}

void AdminServer::stop()
{
    if (!m->started)
        return;
    m->ioc.stop();
    if (m->thread.joinable())
        m->thread.join();
    error_code ec;
    m->acceptor.close(ec);
    m->started = false;
}

std::uint16_t AdminServer::port() const
{
    return m->port;
}

bool AdminServer::loopbackOnly() const
{
    return m->loopback;
}

} // namespace Floodgate::Http
