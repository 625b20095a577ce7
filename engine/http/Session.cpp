// SPDX-License-Identifier: GPL-3.0-or-later
// One client connection: reading with deadlines, deciding at the header
// (the request facts built from the parsed request), answering, pipelining;
// responses are written by hand and batched when pipelined. Proxy mode's
// relaying is in Forwarder.cpp.
#include "http/Session.h"

#include "http/LimiterLog.h"
#include "http/Metrics.h"
#include "http/Peer.h"
#include "http/RequestHead.h"
#include "http/RequestSamples.h"
#include "http/Responses.h"

#include <algorithm>

namespace Floodgate::Http {

Session::Session(Listener::Impl& listener, ThreadContext& thread, tcp::socket socket)
    : m_listener(listener)
    , m_thread(thread)
    , m_socket(std::move(socket))
    , m_buffer(listener.options.headerLimitBytes + 64 * 1024)
    , m_deadline(thread.clock, listener.timeouts)
    , m_clusterTimer(thread.ioc)
    , m_upstreamTimer(thread.ioc)
    , m_upIn(UpstreamHeaderLimitBytes + RelayChunkBytes)
{
    error_code ec;
    const auto ep = m_socket.remote_endpoint(ec);
    m_peer = ec ? Core::IpAddress() : toIp(ep.address());
    m_socket.set_option(tcp::no_delay(true), ec);
    m_data.maxFields = listener.options.maxHeaderFields;
    m_data.headerLimit = listener.options.headerLimitBytes;
}

Session::~Session()
{
    m_thread.sessions.erase(m_self);
    m_listener.openSessions.fetch_sub(1, std::memory_order_acq_rel);  // taken by accept()
    if (m_listener.metrics)
        m_listener.metrics->openConnections.fetch_sub(1, std::memory_order_relaxed);
}

void Session::start()
{
    m_thread.sessions.push_front(this);
    m_self = m_thread.sessions.begin();
    if (m_listener.metrics)
        m_listener.metrics->openConnections.fetch_add(1, std::memory_order_relaxed);
    newRequest();
    read();
}

void Session::expireIfDue(Millis now)
{
    // While forwarding, the deadline is set only when the client is awaited
    // (its body, or reading what it was sent); the upstream has its own timer.
    if (m_deadline.passed(now))
        close();
}

void Session::shutdown()
{
    endWith(Ending::Draining);
    if (!inHand() && m_buffer.size() == 0)
        close();
}

void Session::close()
{
    error_code ec;
    m_socket.shutdown(tcp::socket::shutdown_both, ec);
    m_socket.close(ec);
    m_deadline.clear();
    m_clusterTimer.cancel();
    m_upstreamTimer.cancel();
    if (m_upstream)
        m_upstream->close(ec);
}

void Session::newRequest()
{
    m_data.clear();
    m_parser.emplace(m_data);
    m_parser->header_limit(std::uint32_t(opts().headerLimitBytes));
    m_parser->body_limit(opts().bodyLimitBytes);
    m_parser->eager(false);
    m_exchange = ExchangeFacts{};
    enter(Phase::ReadingHead);
    m_deadline.newRequest();
}

void Session::read()
{
    m_deadline.awaitRead(m_buffer.size() == 0 && !m_parser->got_some(), m_parser->is_header_done());
    if (m_buffer.size() >= m_buffer.max_size()) {
        fail(431, "request header too large");
        return;
    }
    const std::size_t room = std::min<std::size_t>(16 * 1024, m_buffer.max_size() - m_buffer.size());
    m_socket.async_read_some(m_buffer.prepare(room), recycled([self = shared_from_this()](error_code ec, std::size_t n) {
        self->onRead(ec, n);
    }));
}

void Session::onRead(error_code ec, std::size_t n)
{
    if (ec) {
        close();
        return;
    }
    m_buffer.commit(n);
    m_deadline.requestBegan();
    process();
}

// Parses and answers every complete request in the buffer (pipelining),
// up to pipelineDepth per write.
void Session::process()
{
    if (m_phase == Phase::AwaitingCluster)
        return;  // awaitCluster() goes on when the engine has decided
    const Millis now = wallNow();
    std::size_t answered = 0;
    while (true) {
        bool progress = false;
        if (!m_parser->is_done() && m_buffer.size() > 0) {
            error_code ec;
            const std::size_t used = m_parser->put(m_buffer.data(), ec);
            m_buffer.consume(used);
            progress = used > 0;
            if (ec && ec != http::error::need_more) {
                std::string why;
                const int status = statusFor(ec, m_data, m_buffer, opts().headerLimitBytes, why);
                fail(status, why);
                return;
            }
        }
        if (m_parser->is_header_done() && m_phase == Phase::ReadingHead && !decideAtHeader(now))
            return;
        if (m_phase == Phase::ForwardQueued) {
            // Proxy mode relays the body as it comes: nothing more is parsed here.
            if (m_out.empty())
                startForward();
            else
                flush();  // earlier answers (or 100 Continue) first; onWrite starts the forward
            return;
        }
        if (!m_parser->is_done()) {
            if (progress && m_buffer.size() > 0)
                continue;
            break;  // need more bytes
        }
        finishRequest();
        ++answered;
        if (ending())
            break;
        newRequest();
        if (answered >= opts().pipelineDepth || m_buffer.size() == 0)
            break;
    }
    flush();
}

// The header is complete: decide now, before reading any body. Returns
// false when the connection is done with (a refusal with a body to skip,
// a bad target).
bool Session::decideAtHeader(Millis now)
{
    enter(Phase::AnsweringHere);  // unless proxy mode forwards it (below)
    m_data.buildViews();
    const RequestData& d = m_data;
    Core::RequestFacts& f = m_facts;
    // One proxy list for the whole request, even if it is replaced meanwhile.
    const TrustedProxies& proxies = trusted();
    m_exchange.trustedPeer = proxies.contains(m_peer);
    // The facts exactly as `floodgate replay` builds them from a log line (RequestHead.h).
    const RequestHead head{m_peer, d.view(d.method), d.view(d.target), d.views, !opts().upstream};
    ClientIdentity id;
    if (!describeRequest(head, proxies, m_target, id, &m_forwarded, f)) {
        fail(400, m_target.reason);
        return false;
    }
    if (m_target.absoluteForm) {
        useTargetAuthorityAsHost();
        f.headers = d.views;  // the Host may have been added
    }
    m_xff = std::move(id.chain);
    return decideNow(now);
}

// The engine's decision on m_facts, and what follows from it. False when
// the connection is done with, or waits for the cluster (AwaitingCluster).
bool Session::decideNow(Millis now)
{
    const RequestData& d = m_data;
    Core::RequestFacts& f = m_facts;
    ListenerMetrics* metrics = m_listener.metrics;
    const bool sample = metrics && metrics->shouldSample(m_thread.index);
    // The engine's own cost in real time, whatever clock the decision is made at.
    const auto t0 = sample ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    m_decision = m_listener.engine.decide(f, now);
    if (m_decision.waitForCluster) {
        // A cluster node that has admitted what it may for this client
        // before Redis acknowledges: ask again shortly, without holding the
        // thread. Past the longest wait, decide on what this node knows
        // (the engine counts it as an overdraft).
        const auto steadyNow = std::chrono::steady_clock::now();
        if (m_clusterWaitSince == std::chrono::steady_clock::time_point{})
            m_clusterWaitSince = steadyNow;
        if (steadyNow - m_clusterWaitSince < std::chrono::microseconds(Core::Tuning::clusterWaitMicros)) {
            awaitCluster();
            return false;
        }
        f.clusterWaited = true;
        m_decision = m_listener.engine.decide(f, now);
    }
    m_clusterWaitSince = {};
    if (sample)
        metrics->observeLatency(m_thread.index,
                                std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    if (m_listener.samples)
        m_listener.samples->push(m_thread.index, f, now);
    const Core::Action action = m_decision.action;
    if (action != Core::Action::Allow) {
        if (metrics)
            metrics->countRefusal(m_thread.index, m_decision);
        if (m_listener.log)
            m_listener.log->push(m_thread.index, m_decision, f, m_decision.customerId.view(), m_xff, now);
    }
    const bool refused = m_decision.refused();
    m_exchange.keepAlive = m_parser->keep_alive() && !ending();
    if (refused && !m_parser->is_done()) {
        // A refused request with a body: answer now and close rather
        // than read a body nobody will use.
        m_exchange.keepAlive = false;
        respondDecision();
        endWith(Ending::AfterWrite);
        flush();
        return false;
    }
    if (!refused && opts().upstream) {
        enter(Phase::ForwardQueued);
        if (d.header("Expect").size() && Core::equalsIgnoreCase(trimView(d.header("Expect")), "100-continue") && !m_parser->is_done())
            m_out += "HTTP/1.1 100 Continue\r\n\r\n";
    }
    return true;
}

void Session::awaitCluster()
{
    enter(Phase::AwaitingCluster);
    m_clusterTimer.expires_after(std::chrono::microseconds(Core::Tuning::clusterWaitPollMicros));
    m_clusterTimer.async_wait(recycled([self = shared_from_this()](error_code ec) {
        if (ec || !self->m_socket.is_open())
            return;
        self->enter(Phase::AnsweringHere);
        if (self->decideNow(self->wallNow()))
            self->process();  // the rest of this request, and any after it
    }));
}

// Absolute-form: the Host is the target's authority, whatever the Host
// header says (RFC 9112 §3.2.2); header rules see that one.
void Session::useTargetAuthorityAsHost()
{
    bool replaced = false;
    for (auto& h : m_data.views)
        if (Core::equalsIgnoreCase(h.name, "host")) {
            h.value = m_target.authority;
            replaced = true;
        }
    if (!replaced)
        m_data.views.push_back({"Host", m_target.authority});
}

void Session::respondDecision()
{
    ResponseContext ctx;
    ctx.keepAlive = m_exchange.keepAlive;
    ctx.http10 = m_data.version < 11;
    const std::string_view accept = m_data.header("Accept");
    ctx.wantsJson = accept.find("json") != std::string_view::npos;
    ctx.headRequest = Core::equalsIgnoreCase(m_data.view(m_data.method), "HEAD");
    ctx.rateLimitHeaders = m_decision.rateLimitHeadersOnAllowed;
    ctx.throttleStatus = m_decision.throttleStatus;
    // nginx auth_request accepts only 2xx, 401 and 403 from its
    // subrequest: a trusted proxy may ask for throttles as 401 (and turn
    // them back into 429 with the Retry-After it copies; see docs/INTEGRATIONS.md).
    if (m_exchange.trustedPeer) {
        const std::string_view want = trimView(m_data.header("X-Floodgate-Refusal-Status"));
        if (want == "401" || want == "403")
            ctx.throttleStatus = want == "401" ? 401 : 403;
    }
    appendDecisionResponse(m_out, m_decision, ctx);
}

// The request is complete and decided (decision mode, or refused).
void Session::finishRequest()
{
    // Decision mode never sees the upstream's answer: an allowed action
    // is taken as done, so its cooldown starts now (proxy mode waits for a 2xx).
    if (!opts().upstream && !m_decision.refused())
        m_listener.engine.reportSuccess(m_facts, wallNow());
    respondDecision();
    if (!m_exchange.keepAlive)
        endWith(Ending::AfterWrite);
    enter(Phase::Done);
}

void Session::fail(int status, const std::string& why)
{
    if (m_listener.metrics)
        m_listener.metrics->countHttpError(m_thread.index, status);
    appendErrorResponse(m_out, status, why, true, m_data.version < 11 && m_parser->is_header_done());
    endWith(Ending::AfterWrite);
    flush();
}

void Session::flush()
{
    if (m_out.empty()) {
        if (closeAfterWrite() || (ending() && !inHand())) {
            close();
            return;
        }
        read();
        return;
    }
    if (writing())
        return;
    m_deadline.await(Awaiting::Answer);
    m_writeBuffer.swap(m_out);
    m_out.clear();
    net::async_write(m_socket, net::buffer(m_writeBuffer), recycled([self = shared_from_this()](error_code ec, std::size_t) {
        self->onWrite(ec);
    }));
}

void Session::onWrite(error_code ec)
{
    m_writeBuffer.clear();
    if (ec || closeAfterWrite()) {
        close();
        return;
    }
    if (ending() && !inHand()) {
        close();
        return;
    }
    if (m_phase == Phase::ForwardQueued) {
        startForward();
        return;
    }
    if (!m_out.empty()) {
        flush();
        return;
    }
    if (m_buffer.size() > 0)
        process();
    else
        read();
}

} // namespace Floodgate::Http
