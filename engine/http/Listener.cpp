// SPDX-License-Identifier: MIT
// The traffic listener on Boost.Beast + Asio. One io_context per I/O thread,
// each with its own SO_REUSEPORT acceptor (the kernel spreads connections),
// so a connection lives on one thread and needs no strand or lock. Requests
// are parsed by a Beast basic_parser that copies what the engine needs into
// per-connection storage reused from request to request; the engine is
// called inline; responses are written by hand and batched when pipelined.
// Proxy mode's relaying is in Forwarder.cpp.
#include "Session.h"

#include "LimiterLog.h"
#include "Metrics.h"
#include "Peer.h"
#include "RequestSamples.h"
#include "Responses.h"

#include <algorithm>

namespace Floodgate::Http {

namespace {

std::size_t countCookies(const RequestData& d)
{
    std::size_t n = 0;
    for (const auto& [name, value] : d.fields) {
        if (!Core::equalsIgnoreCase(d.view(name), "cookie"))
            continue;
        const std::string_view v = d.view(value);
        if (trimView(v).empty())
            continue;
        n += 1 + std::size_t(std::count(v.begin(), v.end(), ';'));
    }
    return n;
}

} // namespace

// ---- the request parser --------------------------------------------------------

void RequestParser::on_request_impl(http::verb, beast::string_view method, beast::string_view target, int version, error_code&)
{
    m_data.method = m_data.keep(std::string_view(method.data(), method.size()));
    m_data.target = m_data.keep(std::string_view(target.data(), target.size()));
    m_data.version = unsigned(version);
}

void RequestParser::on_field_impl(http::field f, beast::string_view name, beast::string_view value, error_code& ec)
{
    // A trailer field (after a chunked body) arrives here too. The request
    // was decided on its header, whose views point into this storage: a
    // trailer must neither move that storage (a use after free, found by
    // fuzz_listener) nor reach the upstream as if it were a header, so it is
    // dropped, as RFC 9110 section 6.5.1 allows.
    if (is_header_done())
        return;
    if (m_data.fields.size() >= m_data.maxFields) {
        m_data.rejectStatus = 431;
        m_data.rejectReason = "too many header fields";
        ec = http::error::header_limit;
        return;
    }
    const std::string_view n(name.data(), name.size());
    const std::string_view v(value.data(), value.size());
    if (isFolded(n, v)) {
        m_data.rejectStatus = 400;
        m_data.rejectReason = "obsolete line folding: a header continued on the next line";
        ec = http::error::bad_value;
        return;
    }
    // nginx's underscores_in_headers off: "Transfer_Encoding" and
    // "X_User_Id" become the same CGI variable as their dashed twins
    // behind many frameworks; nothing here or upstream sees them.
    if (n.find('_') != std::string_view::npos)
        return;
    // Request smuggling: Beast 1.74 merges identical Content-Length
    // headers and lets "Transfer-Encoding: gzip" pass beside a
    // Content-Length; count them and judge the whole header at its end.
    if (f == http::field::content_length)
        ++m_data.contentLengthCount;
    if (f == http::field::transfer_encoding) {
        ++m_data.transferEncodingCount;
        m_data.transferEncoding = m_data.keep(v);
    }
    const RequestData::Span nameSpan = m_data.keep(n);
    const RequestData::Span valueSpan = m_data.keep(v);
    m_data.fields.emplace_back(nameSpan, valueSpan);
    if (f == http::field::host) {
        ++m_data.hostCount;
        m_data.host = valueSpan;
    }
}

// Beast joins a folded value (RFC 9112 §5.2 obs-fold) in a buffer of its
// own, or, when the first line was empty, hands over the text after the
// fold: either way the value does not follow the name on its line.
bool RequestParser::isFolded(std::string_view name, std::string_view value) const
{
    const auto nameEnd = reinterpret_cast<std::uintptr_t>(name.data() + name.size());
    const auto valueStart = reinterpret_cast<std::uintptr_t>(value.data());
    if (valueStart < nameEnd || valueStart - nameEnd > m_data.headerLimit)
        return true;
    const std::string_view gap(name.data() + name.size(), valueStart - nameEnd);
    return gap.find_first_of("\r\n") != std::string_view::npos;
}

void RequestParser::on_header_impl(error_code& ec)
{
    auto reject = [&](int status, const char* why) {
        m_data.rejectStatus = status;
        m_data.rejectReason = why;
        ec = http::error::bad_transfer_encoding;
    };
    // RFC 9112 §3.2: one Host, with a valid value, in every HTTP/1.1 request.
    if (m_data.hostCount > 1)
        return reject(400, "more than one Host header");
    if (m_data.hostCount == 0 && m_data.version >= 11)
        return reject(400, "an HTTP/1.1 request without a Host header");
    if (m_data.hostCount == 1 && !Core::isValidAuthority(m_data.view(m_data.host)))
        return reject(400, "the Host header is not a host name or address");
    // A reverse proxy opens no tunnels: no resource here supports CONNECT.
    if (m_data.view(m_data.method) == "CONNECT")
        return reject(501, "CONNECT is not supported: Floodgate is not a forward proxy");
    if (m_data.contentLengthCount > 1)
        return reject(400, "more than one Content-Length header");
    if (m_data.transferEncodingCount > 0) {
        if (m_data.contentLengthCount > 0)
            return reject(400, "both Content-Length and Transfer-Encoding");
        if (m_data.version < 11)
            return reject(400, "Transfer-Encoding in an HTTP/1.0 request");
        if (m_data.transferEncodingCount > 1 || !Core::equalsIgnoreCase(trimView(m_data.view(m_data.transferEncoding)), "chunked"))
            return reject(501, "only Transfer-Encoding: chunked is supported");
    }
}

int statusFor(const error_code& ec, const RequestData& data, const beast::flat_buffer& buffer, std::size_t headerLimit,
              std::string& why)
{
    if (data.rejectStatus) {
        why = data.rejectReason;
        return data.rejectStatus;
    }
    if (ec == http::error::header_limit) {
        // A request line that alone overflows the limit is a URI too long.
        // (Beast parses the request line before the fields: once it has, the
        // overflow is in the fields.)
        const std::string_view seen(static_cast<const char*>(buffer.data().data()), std::min(buffer.size(), headerLimit));
        if (data.method.length == 0 && seen.find("\r\n") == std::string_view::npos) {
            why = "request line too long";
            return 414;
        }
        why = "request header too large";
        return 431;
    }
    if (ec == http::error::body_limit) {
        why = "request body too large";
        return 413;
    }
    why = "malformed request: " + ec.message();
    return 400;
}

// ---- a session: reading, deciding, answering ---------------------------------------

Session::Session(Listener::Impl& listener, ThreadContext& thread, tcp::socket socket)
    : m_listener(listener)
    , m_thread(thread)
    , m_socket(std::move(socket))
    , m_buffer(listener.options.headerLimitBytes + 64 * 1024)
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
    if (m_deadline != 0 && now >= m_deadline)
        close();
}

void Session::shutdown()
{
    m_stopping = true;
    if (!m_busy && m_buffer.size() == 0)
        close();
}

void Session::close()
{
    error_code ec;
    m_socket.shutdown(tcp::socket::shutdown_both, ec);
    m_socket.close(ec);
    m_deadline = 0;
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
    m_decided = false;
    m_requestStarted = 0;
}

void Session::read()
{
    const Millis now = steadyMs();
    if (m_buffer.size() == 0 && !m_parser->got_some()) {
        m_deadline = now + opts().idleTimeoutMs;
    } else if (!m_parser->is_header_done()) {
        if (m_requestStarted == 0)
            m_requestStarted = now;
        m_deadline = m_requestStarted + opts().headerTimeoutMs;
    } else {
        m_deadline = now + opts().bodyTimeoutMs;
    }
    if (m_buffer.size() >= m_buffer.max_size()) {
        fail(431, "request header too large");
        return;
    }
    const std::size_t room = std::min<std::size_t>(16 * 1024, m_buffer.max_size() - m_buffer.size());
    m_socket.async_read_some(m_buffer.prepare(room), [self = shared_from_this()](error_code ec, std::size_t n) {
        self->onRead(ec, n);
    });
}

void Session::onRead(error_code ec, std::size_t n)
{
    if (ec) {
        close();
        return;
    }
    m_buffer.commit(n);
    if (m_requestStarted == 0)
        m_requestStarted = steadyMs();
    process();
}

// Parses and answers every complete request in the buffer (pipelining),
// up to pipelineDepth per write.
void Session::process()
{
    const Millis now = wallMs();
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
        if (m_parser->is_header_done() && !m_decided && !decideAtHeader(now))
            return;
        if (m_forwardPending) {
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
        if (m_closeAfterWrite || m_stopping)
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
    m_decided = true;
    m_busy = true;
    m_data.buildViews();
    const RequestData& d = m_data;
    Core::RequestFacts& f = m_facts;
    f = Core::RequestFacts{};
    f.peer = m_peer;
    // One proxy list for the whole request, even if it is replaced meanwhile.
    const TrustedProxies& proxies = trusted();
    m_trustedPeer = proxies.contains(m_peer);
    const bool trustedPeer = m_trustedPeer;
    std::string_view target = d.view(d.target);
    std::string_view method = d.view(d.method);
    if (trustedPeer && !opts().upstream) {
        // nginx auth_request / Traefik ForwardAuth carry the original
        // request in headers. (Proxy mode forwards the request line, so
        // it is what is decided on.)
        if (auto uri = d.header("X-Original-URI"); !uri.empty())
            target = uri;
        else if (auto fwdUri = d.header("X-Forwarded-Uri"); !fwdUri.empty())
            target = fwdUri;
        if (auto m = d.header("X-Original-Method"); !m.empty())
            method = m;
        else if (auto fm = d.header("X-Forwarded-Method"); !fm.empty())
            method = fm;
    }
    // One spelling per resource before anything matches it (and proxy
    // mode forwards exactly this).
    if (!Core::normaliseTarget(target, m_target)) {
        fail(400, m_target.reason);
        return false;
    }
    if (m_target.absoluteForm)
        useTargetAuthorityAsHost();
    // Only the header the operator named (--real-ip-header), never another one.
    std::string trustedValue = trustedPeer ? d.joined(proxies.header()) : std::string();
    // A trusted Forwarded chain is carried on in proxy mode's Forwarded header.
    m_forwarded = proxies.forwardedSyntax() ? trustedValue : std::string();
    ClientIdentity id = resolveClient(m_peer, std::move(trustedValue), proxies);
    f.client = id.client;
    m_xff = std::move(id.chain);
    f.path = m_target.matchPath;
    f.query = m_target.query();
    f.method = method;
    f.userAgent = d.header("User-Agent");
    f.cookieCount = std::uint32_t(countCookies(d));
    f.headers = d.views;

    ListenerMetrics* metrics = m_listener.metrics;
    const bool sample = metrics && metrics->shouldSample(m_thread.index);
    const auto t0 = sample ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    m_decision = m_listener.engine.decide(f, now);
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
    m_keepAlive = m_parser->keep_alive() && !m_stopping;
    if (refused && !m_parser->is_done()) {
        // A refused request with a body: answer now and close rather
        // than read a body nobody will use.
        m_keepAlive = false;
        respondDecision();
        m_closeAfterWrite = true;
        flush();
        return false;
    }
    if (!refused && opts().upstream) {
        m_forwardPending = true;
        if (d.header("Expect").size() && Core::equalsIgnoreCase(trimView(d.header("Expect")), "100-continue") && !m_parser->is_done())
            m_out += "HTTP/1.1 100 Continue\r\n\r\n";
    }
    return true;
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
    ctx.keepAlive = m_keepAlive;
    ctx.http10 = m_data.version < 11;
    const std::string_view accept = m_data.header("Accept");
    ctx.wantsJson = accept.find("json") != std::string_view::npos;
    ctx.headRequest = Core::equalsIgnoreCase(m_data.view(m_data.method), "HEAD");
    ctx.rateLimitHeaders = m_decision.rateLimitHeadersOnAllowed;
    ctx.throttleStatus = m_decision.throttleStatus;
    // nginx auth_request accepts only 2xx, 401 and 403 from its
    // subrequest: a trusted proxy may ask for throttles as 401 (and turn
    // them back into 429 with the Retry-After it copies; see docs/INTEGRATIONS.md).
    if (m_trustedPeer) {
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
        m_listener.engine.reportSuccess(m_facts, wallMs());
    respondDecision();
    if (!m_keepAlive)
        m_closeAfterWrite = true;
    m_busy = false;
}

void Session::fail(int status, const std::string& why)
{
    if (m_listener.metrics)
        m_listener.metrics->countHttpError(m_thread.index, status);
    appendErrorResponse(m_out, status, why, true, m_data.version < 11 && m_parser->is_header_done());
    m_closeAfterWrite = true;
    flush();
}

void Session::flush()
{
    if (m_out.empty()) {
        if (m_closeAfterWrite || (m_stopping && !m_busy)) {
            close();
            return;
        }
        read();
        return;
    }
    if (m_writing)
        return;
    m_writing = true;
    m_deadline = steadyMs() + opts().writeTimeoutMs;
    m_writeBuffer.swap(m_out);
    m_out.clear();
    net::async_write(m_socket, net::buffer(m_writeBuffer), [self = shared_from_this()](error_code ec, std::size_t) {
        self->onWrite(ec);
    });
}

void Session::onWrite(error_code ec)
{
    m_writing = false;
    m_writeBuffer.clear();
    if (ec || m_closeAfterWrite) {
        close();
        return;
    }
    if (m_stopping && !m_busy) {
        close();
        return;
    }
    if (m_forwardPending) {
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
    t.sweeper.expires_after(std::chrono::milliseconds(Core::Tuning::sweepIntervalMs));
    t.sweeper.async_wait([this, &t](error_code ec) {
        // Stopping: a sweep that fired before stop() cancelled it must not
        // arm the timer again, or the thread never runs out of work and
        // stop() waits for it forever.
        if (ec || stopping.load())
            return;
        const Millis now = steadyMs();
        // expireIfDue may close a session, whose destructor runs later (after
        // its pending handlers): iterating the list here is safe.
        for (Session* s : t.sessions)
            s->expireIfDue(now);
        sweep(t);
    });
}

Listener::Listener(Core::Engine& engine, ListenerOptions options, LimiterLog* log, ListenerMetrics* metrics)
    : m(std::make_unique<Impl>(engine, std::move(options), log, metrics))
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
        auto t = std::make_unique<ThreadContext>(i);
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
    // this stack frame after it is gone.
    const Millis deadline = steadyMs() + m->options.shutdownDeadlineMs;
    while (m->openSessions.load(std::memory_order_acquire) > 0 && steadyMs() < deadline)
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
