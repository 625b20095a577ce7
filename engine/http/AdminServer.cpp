// SPDX-License-Identifier: MIT
#include <utility>  // before Asio (Boost 1.74 + GCC 12)

#include "AdminServer.h"

#include "Json.h"
#include "Responses.h"
#include "Rules.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <list>
#include <mutex>
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

namespace {

class AdminSession;

// Answers come back from the worker and the store's writer thread; they
// reach the I/O thread only while the server runs.
struct ReplyGate {
    std::mutex mutex;
    net::io_context* ioc = nullptr;  // null once stopped
};

} // namespace

struct AdminServer::Impl {
    AdminOptions options;
    AdminHandlers handlers;
    net::io_context ioc{1};
    tcp::acceptor acceptor{ioc};
    net::steady_timer acceptRetry{ioc};
    std::thread thread;
    // The worker: API requests, which may read the database or parse a
    // large body, run here so the I/O thread keeps answering /healthz.
    net::io_context work{1};
    std::optional<net::executor_work_guard<net::io_context::executor_type>> workGuard;
    std::thread worker;
    std::shared_ptr<ReplyGate> gate = std::make_shared<ReplyGate>();
    // Every open connection, oldest first (I/O thread only). The server
    // owns them: an answer still to come holds only a weak reference.
    std::list<std::shared_ptr<AdminSession>> sessions;
    std::uint16_t port = 0;
    bool loopback = true;
    bool started = false;

    void accept();
    AdminReply replyTo(const std::shared_ptr<AdminSession>& session);
};

namespace {

AdminResponse internalError(const std::string& what)
{
    AdminResponse r;
    r.status = 500;
    r.contentType = "application/json";
    r.body = "{\"error\":";
    Core::appendJsonString(r.body, "internal: " + what);
    r.body += "}\n";
    return r;
}

class AdminSession : public std::enable_shared_from_this<AdminSession> {
public:
    AdminSession(AdminServer::Impl& server, tcp::socket socket) : m_server(server), m_stream(std::move(socket)) {}

    void start(std::list<std::shared_ptr<AdminSession>>::iterator self)
    {
        m_self = self;
        m_registered = true;
        read();
    }

    // The answer to the request in hand (I/O thread).
    void answer(const AdminResponse& r) { write(r, m_keepAlive, m_head); }

    void close()
    {
        error_code ec;
        m_stream.socket().shutdown(tcp::socket::shutdown_both, ec);
        m_stream.close();
        if (m_registered) {
            m_registered = false;
            auto keep = shared_from_this();  // erasing may drop the last owner
            m_server.sessions.erase(m_self);
        }
    }

private:
    void read()
    {
        m_parser.emplace();
        m_parser->header_limit(16 * 1024);
        m_parser->body_limit(m_server.options.bodyLimitBytes);
        m_stream.expires_after(std::chrono::seconds(30));
        http::async_read(m_stream, m_buffer, *m_parser, [self = shared_from_this()](error_code ec, std::size_t) { self->onRead(ec); });
    }

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
        auto& req = m_parser->get();
        AdminRequest ar;
        ar.method = std::string(req.method_string());
        ar.target = std::string(req.target());
        const auto q = ar.target.find('?');
        ar.path = ar.target.substr(0, q);
        ar.query = q == std::string::npos ? std::string() : ar.target.substr(q + 1);
        for (const auto& f : req)
            ar.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
        ar.body = std::move(req.body());
        error_code ignored;
        const auto ep = m_stream.socket().remote_endpoint(ignored);
        if (!ignored)
            ar.peer = ep.address().is_v4() ? Core::IpAddress::fromV4(ep.address().to_v4().to_uint()) : [&] {
                const auto b = ep.address().to_v6().to_bytes();
                Core::IpAddress::Bytes bytes;
                std::copy(b.begin(), b.end(), bytes.begin());
                return Core::IpAddress(bytes);
            }();
        m_keepAlive = req.keep_alive();
        m_head = req.method() == http::verb::head;
        std::optional<AdminResponse> now;
        try {
            if (m_server.handlers.atOnce)
                now = m_server.handlers.atOnce(ar);
        } catch (const std::exception& e) {
            now = internalError(e.what());
        }
        if (now) {
            answer(*now);
            return;
        }
        // To the worker; the answer comes back through the reply, perhaps
        // from the store's writer thread after COMMIT.
        net::post(m_server.work, [handle = &m_server.handlers.handle, ar = std::move(ar), reply = m_server.replyTo(shared_from_this())] {
            try {
                (*handle)(ar, reply);
            } catch (const std::exception& e) {
                reply(internalError(e.what()));
            }
        });
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

    AdminServer::Impl& m_server;
    beast::tcp_stream m_stream;
    beast::flat_buffer m_buffer;
    std::optional<http::request_parser<http::string_body>> m_parser;
    std::string m_out;
    bool m_keepAlive = true;
    bool m_head = false;
    std::list<std::shared_ptr<AdminSession>>::iterator m_self;
    bool m_registered = false;
};

} // namespace

AdminReply AdminServer::Impl::replyTo(const std::shared_ptr<AdminSession>& session)
{
    return [gate = gate, weak = std::weak_ptr<AdminSession>(session)](AdminResponse r) {
        std::lock_guard lock(gate->mutex);
        if (!gate->ioc)
            return;  // stopped: nobody is waiting any more
        net::post(*gate->ioc, [weak, r = std::move(r)] {
            if (const auto s = weak.lock())
                s->answer(r);
        });
    };
}

void AdminServer::Impl::accept()
{
    acceptor.async_accept(ioc, [this](error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted || !acceptor.is_open())
            return;
        if (!ec) {
            if (sessions.size() >= options.maxConnections) {
                error_code ignored;
                socket.close(ignored);
            } else {
                auto s = std::make_shared<AdminSession>(*this, std::move(socket));
                sessions.push_back(s);
                s->start(std::prev(sessions.end()));
            }
            accept();
            return;
        }
        // Out of descriptors or similar: try again shortly, keep the port.
        acceptRetry.expires_after(std::chrono::milliseconds(100));
        acceptRetry.async_wait([this](error_code e) {
            if (!e)
                accept();
        });
    });
}

AdminServer::AdminServer(AdminOptions options, AdminHandlers handlers) : m(std::make_unique<Impl>())
{
    m->options = std::move(options);
    m->handlers = std::move(handlers);
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
    {
        std::lock_guard lock(m->gate->mutex);
        m->gate->ioc = &m->ioc;
    }
    m->accept();
    m->workGuard.emplace(m->work.get_executor());
    m->worker = std::thread([this] { m->work.run(); });
    m->thread = std::thread([this] { m->ioc.run(); });
    m->started = true;
    return true;
}

void AdminServer::stop()
{
    if (!m->started)
        return;
    m->started = false;
    {
        // Answers still to come (a write waiting for its COMMIT) are dropped.
        std::lock_guard lock(m->gate->mutex);
        m->gate->ioc = nullptr;
    }
    // Close everything on the I/O thread; it runs out of work and returns.
    net::post(m->ioc, [impl = m.get()] {
        error_code ec;
        impl->acceptor.close(ec);
        impl->acceptRetry.cancel();
        const auto open = impl->sessions;  // close() erases from the list
        for (const auto& s : open)
            s->close();
    });
    if (m->thread.joinable())
        m->thread.join();
    // Requests queued for the worker and not started are dropped with it.
    m->workGuard.reset();
    m->work.stop();
    if (m->worker.joinable())
        m->worker.join();
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
