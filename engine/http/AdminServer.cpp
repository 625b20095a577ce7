// SPDX-License-Identifier: GPL-3.0-or-later
#include <utility>  // before Asio (Boost 1.74 + GCC 12)

#include "http/AdminServer.h"

#include "http/Deadlines.h"
#include "wire/Json.h"
#include "http/Peer.h"
#include "http/Responses.h"
#include "core/Rules.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <list>
#include <map>
#include <mutex>
#include <thread>

namespace Floodgate::Http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using Core::Millis;

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
    Impl(AdminOptions o, AdminHandlers h, const Core::Clock& c)
        : options(std::move(o)), handlers(std::move(h)), clock(c), timeouts(ClientTimeouts::of(options))
    {
    }

    AdminOptions options;
    AdminHandlers handlers;
    const Core::Clock& clock;  // deadlines are judged on its monotonic time
    ClientTimeouts timeouts;
    net::io_context ioc{1};
    tcp::acceptor acceptor{ioc};
    net::steady_timer acceptRetry{ioc};
    net::steady_timer sweeper{ioc};
    std::thread thread;
    // The worker: API requests, which may read the database or parse a
    // large body, run here so the I/O thread keeps answering /healthz.
    net::io_context work{1};
    std::optional<net::executor_work_guard<net::io_context::executor_type>> workGuard;
    std::thread worker;
    std::shared_ptr<ReplyGate> gate = std::make_shared<ReplyGate>();
    // Every open connection, oldest first, and how many each client holds
    // (I/O thread only). The server owns the sessions: an answer still to
    // come holds only a weak reference.
    std::list<std::shared_ptr<AdminSession>> sessions;
    std::map<Core::IpAddress, std::size_t> perClient;
    std::uint16_t port = 0;
    bool started = false;
    // Set on the I/O thread when stop() closes everything: a timer that
    // fired just before must not arm itself again (Deadlines.h, sweepEvery).
    bool stopping = false;

    void accept();
    void admit(tcp::socket socket);
    bool evictFor(const Core::IpAddress* client);
    void sweep();
    AdminReply replyTo(const std::shared_ptr<AdminSession>& session);
};

namespace {

AdminResponse jsonError(int status, const std::string& message)
{
    AdminResponse r;
    r.status = status;
    r.contentType = "application/json";
    r.body = "{\"error\":";
    Wire::appendJsonString(r.body, message);
    r.body += "}\n";
    return r;
}

class AdminSession : public std::enable_shared_from_this<AdminSession> {
public:
    AdminSession(AdminServer::Impl& server, tcp::socket socket, Core::IpAddress peer)
        : m_server(server), m_socket(std::move(socket)), m_peer(peer), m_deadline(server.clock, server.timeouts)
    {
    }

    void start(std::list<std::shared_ptr<AdminSession>>::iterator self)
    {
        m_self = self;
        m_registered = true;
        ++m_server.perClient[m_peer];
        newRequest();
        read();
    }

    const Core::IpAddress& peer() const { return m_peer; }
    // Waiting for the client (its request, or for it to take the answer),
    // not for the API: a connection that may be closed to make room.
    bool evictable() const { return !m_busy; }

    // Called by the sweeper: a header, a body or an answer late past its
    // deadline (slowloris, a trickled body, a client that does not read).
    void expireIfDue(Millis now)
    {
        if (m_deadline.passed(now))
            close();
    }

    // The answer to the request in hand (I/O thread).
    void answer(const AdminResponse& r)
    {
        m_busy = false;
        write(r, m_keepAlive, m_head);
    }

    void close()
    {
        error_code ec;
        m_socket.shutdown(tcp::socket::shutdown_both, ec);
        m_socket.close(ec);
        m_deadline.clear();
        if (m_registered) {
            m_registered = false;
            auto keep = shared_from_this();  // erasing may drop the last owner
            if (const auto it = m_server.perClient.find(m_peer); it != m_server.perClient.end() && --it->second == 0)
                m_server.perClient.erase(it);
            m_server.sessions.erase(m_self);
        }
    }

private:
    const AdminOptions& opts() const { return m_server.options; }

    void newRequest()
    {
        m_parser.emplace();
        m_parser->header_limit(16 * 1024);
        m_parser->body_limit(opts().bodyLimitBytes);
        m_deadline.newRequest();
    }

    // The traffic listener's deadline model (Deadlines.h): waiting for a
    // request (idle), its header complete within headerTimeoutMs of its
    // first byte, no gap longer than bodyTimeoutMs in its body. The bytes
    // are read here and fed to the parser, so the first byte of a header is
    // seen when it comes (Beast's own read would wait for the whole header).
    void read()
    {
        m_deadline.awaitRead(m_buffer.size() == 0 && !m_parser->got_some(), m_parser->is_header_done());
        const std::size_t room = std::min<std::size_t>(16 * 1024, m_buffer.max_size() - m_buffer.size());
        if (room == 0) {
            write(jsonError(431, "request: the request header is too large"), false);
            return;
        }
        m_socket.async_read_some(m_buffer.prepare(room), [self = shared_from_this()](error_code ec, std::size_t n) { self->onRead(ec, n); });
    }

    void onRead(error_code ec, std::size_t n)
    {
        if (ec || !m_registered) {
            close();  // the client left, or the connection was closed meanwhile (a deadline, an eviction, the stop)
            return;
        }
        m_buffer.commit(n);
        parse();
    }

    // Feeds what is buffered to the parser: the request is dispatched once
    // complete, otherwise more is read.
    void parse()
    {
        if (m_buffer.size() > 0)
            m_deadline.requestBegan();
        while (!m_parser->is_done() && m_buffer.size() > 0) {
            error_code ec;
            const std::size_t used = m_parser->put(m_buffer.data(), ec);
            m_buffer.consume(used);
            if (ec == http::error::need_more)
                break;
            if (ec) {
                const bool large = ec == http::error::body_limit;
                write(jsonError(large ? 413 : (ec == http::error::header_limit ? 431 : 400),
                                large ? "body: the request body is too large" : "request: malformed HTTP request"),
                      false);
                return;
            }
            if (used == 0)
                break;
        }
        if (m_parser->is_done())
            dispatch();
        else
            read();
    }

    void dispatch()
    {
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
        ar.peer = m_peer;
        m_keepAlive = req.keep_alive();
        m_head = req.method() == http::verb::head;
        m_busy = true;
        m_deadline.clear();  // the API's time; the store bounds its own waits
        std::optional<AdminResponse> now;
        try {
            if (m_server.handlers.atOnce)
                now = m_server.handlers.atOnce(ar);
        } catch (const std::exception& e) {
            now = jsonError(500, std::string("internal: ") + e.what());
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
                reply(jsonError(500, std::string("internal: ") + e.what()));
            }
        });
    }

    // HEAD: the same headers (Content-Length included), no body.
    void write(const AdminResponse& r, bool keepAlive, bool head = false)
    {
        if (!m_registered)
            return;
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
        m_deadline.await(Awaiting::Answer);
        net::async_write(m_socket, net::buffer(m_out), [self = shared_from_this()](error_code ec, std::size_t) {
            if (ec || !self->m_keepAlive) {
                self->close();
                return;
            }
            self->newRequest();
            self->parse();  // a pipelined request may be buffered already
        });
    }

    AdminServer::Impl& m_server;
    tcp::socket m_socket;
    Core::IpAddress m_peer;
    beast::flat_buffer m_buffer{16 * 1024 + 16 * 1024};  // a whole header (16 KiB) and a read's worth more
    std::optional<http::request_parser<http::string_body>> m_parser;
    std::string m_out;
    ClientDeadline m_deadline;
    bool m_keepAlive = true;
    bool m_head = false;
    bool m_busy = false;  // the API has the request
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

// A connection that would pass a cap closes the oldest one that is only
// waiting for its client (a slow or idle one) — of the same client at the
// per-client cap, of the client holding the most at the total cap — so
// slow connections cannot lock /healthz, /metrics and the API out.
bool AdminServer::Impl::evictFor(const Core::IpAddress* client)
{
    Core::IpAddress target;
    if (client) {
        target = *client;
    } else {
        std::size_t most = 0;
        for (const auto& [address, count] : perClient) {
            if (count > most) {
                most = count;
                target = address;
            }
        }
    }
    for (const auto& s : sessions) {
        if (s->peer() == target && s->evictable()) {
            s->close();
            return true;
        }
    }
    if (client)
        return false;
    for (const auto& s : sessions) {
        if (s->evictable()) {
            s->close();
            return true;
        }
    }
    return false;
}

void AdminServer::Impl::admit(tcp::socket socket)
{
    error_code ec;
    const auto endpoint = socket.remote_endpoint(ec);
    if (ec)
        return;  // already gone
    const Core::IpAddress peer = toIp(endpoint.address());
    const auto held = perClient.find(peer);
    const bool clientFull = held != perClient.end() && held->second >= options.maxConnectionsPerClient;
    if ((clientFull && !evictFor(&peer)) || (sessions.size() >= options.maxConnections && !evictFor(nullptr))) {
        socket.close(ec);  // every connection is busy with the API: refuse this one
        return;
    }
    auto s = std::make_shared<AdminSession>(*this, std::move(socket), peer);
    sessions.push_back(s);
    s->start(std::prev(sessions.end()));
}

void AdminServer::Impl::accept()
{
    acceptor.async_accept(ioc, [this](error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted || !acceptor.is_open() || stopping)
            return;
        if (!ec) {
            admit(std::move(socket));
            accept();
            return;
        }
        // Out of descriptors or similar: try again shortly, keep the port.
        acceptRetry.expires_after(std::chrono::milliseconds(100));
        acceptRetry.async_wait([this](error_code e) {
            if (!e && !stopping)
                accept();
        });
    });
}

void AdminServer::Impl::sweep()
{
    sweepEvery(
        sweeper, clock, [this] { return stopping; },
        [this](Millis now) {
            const auto open = sessions;  // expiring closes, and closing erases from the list
            for (const auto& s : open)
                s->expireIfDue(now);
        });
}

AdminServer::AdminServer(AdminOptions options, AdminHandlers handlers, const Core::Clock& clock)
    : m(std::make_unique<Impl>(std::move(options), std::move(handlers), clock))
{
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
    m->sweep();
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
        impl->stopping = true;
        error_code ec;
        impl->acceptor.close(ec);
        impl->acceptRetry.cancel();
        impl->sweeper.cancel();
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

} // namespace Floodgate::Http
