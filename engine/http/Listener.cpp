// SPDX-License-Identifier: GPL-3.0-or-later
// The traffic listener on Boost.Beast + Asio. One io_context per I/O thread,
// each with its own SO_REUSEPORT acceptor (the kernel spreads connections),
// so a connection lives on one thread and needs no strand or lock; the
// engine is called inline. This file accepts, sweeps deadlines, starts and
// stops; RequestParser.cpp parses a request, Session.cpp serves one
// connection, Forwarder.cpp relays in proxy mode.
#include "http/Session.h"

#include "http/LimiterLog.h"
#include "http/Metrics.h"
#include "http/RequestSamples.h"
#include "http/Responses.h"

#include <algorithm>

namespace Floodgate::Http {

// ---- accepting, sweeping -------------------------------------------------------

void Listener::Impl::accept(ThreadContext& t)
{
    t.acceptor.async_accept(t.ioc, [this, &t](error_code ec, tcp::socket socket) {
        if (stopping.load())
            return;
        if (ec) {
            if (ec == net::error::operation_aborted)
                return;
            // EMFILE, ENFILE, ENOBUFS...: back off and try again; never give up the port.
            if (metrics)
                metrics->acceptErrors.fetch_add(1, std::memory_order_relaxed);
            t.acceptRetry.expires_after(std::chrono::milliseconds(100));
            t.acceptRetry.async_wait([this, &t](error_code e) {
                if (!e)
                    accept(t);
            });
            return;
        }
        // Reserve a place first so threads accepting at once cannot overshoot
        // the cap; the session gives it back when it ends.
        if (std::size_t(openSessions.fetch_add(1, std::memory_order_acq_rel)) >= options.maxConnections) {
            openSessions.fetch_sub(1, std::memory_order_acq_rel);
            if (metrics)
                metrics->rejectedConnections.fetch_add(1, std::memory_order_relaxed);
            error_code ignored;
            socket.close(ignored);
        } else {
            if (metrics)
                metrics->acceptedConnections.fetch_add(1, std::memory_order_relaxed);
            std::make_shared<Session>(*this, t, std::move(socket))->start();
        }
        accept(t);
    });
}

void Listener::Impl::sweep(ThreadContext& t)
{
    // stop() sets `stopping` before its grace period: sweeps end there and
    // the grace period alone bounds the requests in hand.
    sweepEvery(
        t.sweeper, clock, [this] { return stopping.load(); },
        [this, &t](Millis now) {
            // expireIfDue may close a session, whose destructor runs later
            // (after its pending handlers): iterating the list here is safe.
            for (Session* s : t.sessions)
                s->expireIfDue(now);
            // Refusals this thread folded while its limiter.log ring was
            // full reach the writer even when no more come.
            if (log)
                log->handOver(t.index);
        });
}

Listener::Listener(Core::Engine& engine, ListenerOptions options, LimiterLog* log, ListenerMetrics* metrics,
                   const Core::Clock& clock)
    : m(std::make_unique<Impl>(engine, std::move(options), log, metrics, clock))
{
    if (m->options.threads == 0)
        m->options.threads = std::max(1u, std::thread::hardware_concurrency());
}

Listener::~Listener()
{
    stop();
}

bool Listener::start(std::string* error)
{
    if (m->started)
        return true;
    m->stopping = false;  // a listener stopped before may start again (the console's toggle)
    auto fail = [&](std::string why) {
        if (error)
            *error = std::move(why);
        m->threads.clear();
        return false;
    };
    error_code ec;
    const auto address = net::ip::make_address(m->options.address, ec);
    if (ec)
        return fail("\"" + m->options.address + "\" is not an IP address to listen on");
    tcp::endpoint endpoint(address, m->options.port);
    for (unsigned i = 0; i < m->options.threads; ++i) {
        auto t = std::make_unique<ThreadContext>(i, m->clock);
        t->acceptor.open(endpoint.protocol(), ec);
        if (!ec)
            t->acceptor.set_option(net::socket_base::reuse_address(true), ec);
        if (!ec) {
            // One acceptor per thread on the same port; the kernel balances.
            int one = 1;
            if (::setsockopt(t->acceptor.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
                ec = error_code(errno, boost::system::system_category());
        }
        if (!ec)
            t->acceptor.bind(endpoint, ec);
        if (!ec)
            t->acceptor.listen(net::socket_base::max_listen_connections, ec);
        if (ec)
            return fail("cannot listen on " + m->options.address + ":" + std::to_string(endpoint.port()) + ": " + ec.message());
        if (i == 0) {
            // Port 0: every further acceptor joins the port the first one got.
            endpoint.port(t->acceptor.local_endpoint().port());
            m->port = endpoint.port();
        }
        m->threads.push_back(std::move(t));
    }
    if (m->options.upstream) {
        // Resolve once at start; the address of an upstream does not move under a running proxy.
        net::io_context resolverContext;
        tcp::resolver resolver(resolverContext);
        const auto results = resolver.resolve(m->options.upstream->host, std::to_string(m->options.upstream->port), ec);
        if (ec || results.empty())
            return fail("cannot resolve the upstream " + m->options.upstream->text + ": " + ec.message());
        for (auto& t : m->threads)
            for (const auto& r : results)
                t->upstreamEndpoints.push_back(r.endpoint());
    }
    for (auto& t : m->threads) {
        m->workGuards.push_back(net::make_work_guard(t->ioc));
        m->accept(*t);
        m->sweep(*t);
        ThreadContext* tp = t.get();
        t->thread = std::thread([tp] {
            tp->ioc.run();
        });
    }
    m->started = true;
    return true;
}

void Listener::stop()
{
    if (!m->started || m->stopping.exchange(true))
        return;
    // 1. Stop accepting; ask every connection to finish the request in hand.
    for (auto& t : m->threads) {
        ThreadContext* tp = t.get();
        net::post(tp->ioc, [tp] {
            error_code ec;
            tp->acceptor.close(ec);
            tp->acceptRetry.cancel();
            for (Session* s : tp->sessions)
                s->shutdown();
        });
    }
    // 2. Give them until the deadline. The count is read where it is kept:
    // nothing is posted to a thread that may be busy, so nothing waits on
    // this stack frame after it is gone. Real time, not the injected clock:
    // this thread sleeps through the wait, and a manual clock nobody moves
    // would never end it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(m->options.shutdownDeadlineMs);
    while (m->openSessions.load(std::memory_order_acquire) > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // 3. Close whatever is left and end the threads.
    for (auto& t : m->threads) {
        ThreadContext* tp = t.get();
        net::post(tp->ioc, [tp] {
            for (Session* s : tp->sessions)
                s->close();
            tp->sweeper.cancel();
            for (auto& u : tp->idleUpstream) {
                error_code ec;
                u.close(ec);
            }
            tp->idleUpstream.clear();
        });
    }
    m->workGuards.clear();
    for (auto& t : m->threads) {
        if (t->thread.joinable()) {
            // Handlers of closed sockets complete with operation_aborted;
            // the context then runs out of work and run() returns.
            t->thread.join();
        }
    }
    m->threads.clear();
    m->started = false;
}

void Listener::setRequestSamples(RequestSamples* samples)
{
    m->samples = samples;
}

void Listener::setTrustedProxies(TrustedProxies proxies)
{
    auto next = std::make_shared<const TrustedProxies>(std::move(proxies));
    std::lock_guard lock(m->proxiesMutex);
    m->proxies = std::move(next);
    m->proxiesVersion.fetch_add(1, std::memory_order_acq_rel);
}

std::uint16_t Listener::port() const
{
    return m->port;
}

unsigned Listener::threads() const
{
    return m->options.threads;
}

const ListenerOptions& Listener::options() const
{
    return m->options;
}

} // namespace Floodgate::Http
