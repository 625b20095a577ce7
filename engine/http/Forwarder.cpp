// SPDX-License-Identifier: GPL-3.0-or-later
// Proxy mode: an allowed request is relayed to the upstream and the answer
// back to the client, a bounded piece at a time in each direction. A piece
// is written before the next is read (back-pressure), so a proxied
// connection holds a few buffers of RelayChunkBytes whatever the length of
// the bodies, and a client that reads slowly slows the upstream instead of
// filling Floodgate's memory.
//
//   allowed at the header (ForwardQueued) -> connect, or take a pooled
//   connection (Connecting) -> send the head, then the request body: client
//   bytes -> parser -> framed -> upstream, repeat until done (SendingRequest)
//   -> the response head (AwaitingResponse) -> the client's head, then the
//   body: upstream -> parser -> client, repeat (RelayingResponse) -> the
//   upstream connection back to the pool when it allows -> the next request
//
// (The phases are Session.h's, with the edges back: a failure Floodgate
// answers itself, the one retry on a new connection.)
//
// The head sent upstream (fields, forwarding headers, the upstream URL) is
// ForwardHead.cpp's.
#include "http/Session.h"

#include "http/Metrics.h"
#include "http/Responses.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace Floodgate::Http {

namespace {

bool isIdempotent(std::string_view method)
{
    return method == "GET" || method == "HEAD" || method == "OPTIONS" || method == "PUT" || method == "DELETE";
}

// A pooled connection the upstream has closed meanwhile reads as EOF; one
// with stray bytes waiting cannot be trusted with a new request either.
bool stillUsable(tcp::socket& s)
{
    char c;
    const ssize_t n = ::recv(s.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

} // namespace

// ---- the request -------------------------------------------------------------

void Session::startForward()
{
    m_deadline.clear();  // set again whenever the client is awaited
    m_exchange.requestHasBody = m_parser->chunked() || m_parser->content_length().value_or(0) > 0;
    m_upOut.clear();
    appendUpstreamHead(m_upOut);
    if (m_exchange.requestHasBody) {
        // From here on the parser frames every body piece into m_upOut.
        m_data.bodySink = &m_upOut;
        m_data.chunkBody = m_parser->chunked();
    }
    connectUpstream(true);
}

// The request line and header for the upstream: the normalised target under
// the base path, the fields minus hop-by-hop ones (and those the Connection
// header names), Expect (answered here) and every forwarding header (written
// anew), the body framed as it came (Content-Length, or chunked).
void Session::connectUpstream(bool pooledAllowed)
{
    enter(Phase::Connecting);
    m_attempt = UpstreamAttempt{};
    ++m_attemptSerial;
    while (pooledAllowed && !m_thread.idleUpstream.empty()) {
        tcp::socket pooled = std::move(m_thread.idleUpstream.back());
        m_thread.idleUpstream.pop_back();
        // Without a body, the read of the response checks it (probePooled):
        // no system call of its own.
        const bool probe = !m_exchange.requestHasBody;
        if (probe || stillUsable(pooled)) {
            m_upstream.emplace(std::move(pooled));
            m_attempt.pooled = true;
            enter(Phase::SendingRequest);
            if (probe)
                probePooled();
            else
                pumpRequest();
            return;
        }
        error_code ignored;
        pooled.close(ignored);
    }
    m_upstream.emplace(m_thread.ioc);
    armUpstreamTimer(opts().upstreamConnectTimeoutMs);
    net::async_connect(*m_upstream, m_thread.upstreamEndpoints, recycled([self = shared_from_this()](error_code ec, const tcp::endpoint&) {
        self->disarmUpstreamTimer();
        if (!self->m_socket.is_open()) {
            self->abandonExchange();
            return;
        }
        if (ec) {
            const bool late = self->m_attempt.timedOut;
            self->upstreamFailed(late ? 504 : 502,
                                 late ? "the upstream did not accept the connection in time" : "the upstream is not reachable");
            return;
        }
        error_code ignored;
        self->m_upstream->set_option(tcp::no_delay(true), ignored);
        self->enter(Phase::SendingRequest);
        self->pumpRequest();
    }));
}

// Moves what the client has sent of the body to the upstream, one bounded
// piece at a time, reading more only once the last piece is written.
void Session::pumpRequest()
{
    while (!m_parser->is_done() && m_buffer.size() > 0 && m_upOut.size() < RelayChunkBytes) {
        error_code ec;
        const std::size_t used = m_parser->put(m_buffer.data(), ec);
        m_buffer.consume(used);
        if (ec == http::error::need_more)
            break;
        if (ec) {
            // A chunked body over the limit, a malformed chunk: the upstream
            // has part of a request it must not act on.
            dropUpstream();
            enter(Phase::AnsweringHere);
            std::string why;
            const int status = statusFor(ec, m_data, m_buffer, opts().headerLimitBytes, why);
            fail(status, why);
            return;
        }
        if (used == 0)
            break;
    }
    if (!m_upOut.empty()) {
        writeUpstream();
        return;
    }
    if (!m_parser->is_done()) {
        readRequestBody();
        return;
    }
    m_data.bodySink = nullptr;
    readResponse();
}

void Session::readRequestBody()
{
    const std::size_t room = std::min<std::size_t>(16 * 1024, m_buffer.max_size() - m_buffer.size());
    if (room == 0) {  // a chunk header longer than the whole buffer
        dropUpstream();
        enter(Phase::AnsweringHere);
        fail(400, "malformed request: a chunk header too long");
        return;
    }
    m_deadline.await(Awaiting::Body);
    m_socket.async_read_some(m_buffer.prepare(room), recycled([self = shared_from_this()](error_code ec, std::size_t n) {
        self->m_deadline.clear();
        if (ec) {  // the client went away (or was cut off by the sweeper) mid-body
            self->abandonExchange();
            return;
        }
        self->m_buffer.commit(n);
        self->pumpRequest();
    }));
}

void Session::writeUpstream()
{
    armUpstreamTimer(opts().upstreamResponseTimeoutMs);
    net::async_write(*m_upstream, net::buffer(m_upOut), recycled([self = shared_from_this()](error_code ec, std::size_t) {
        self->disarmUpstreamTimer();
        if (!self->m_socket.is_open()) {
            self->abandonExchange();
            return;
        }
        if (ec) {
            self->upstreamBroke(502, "the upstream closed the connection while the request was sent");
            return;
        }
        self->m_upOut.clear();
        self->pumpRequest();
    }));
}

// A pooled connection the upstream closed meanwhile, or one with stray
// bytes waiting, must not carry the request. The read of the response starts
// first: Asio tries it at once, and on a good connection that try finds
// nothing (EAGAIN) and leaves the read waiting, where the request's own read
// would have tried in vain after the write. The request is sent from a
// handler posted behind the read's: a read that ended at once (end of file,
// stray bytes) completes first, while m_attempt.probing still says the
// request is unsent, and the next pooled connection (or a new one) is taken.
void Session::probePooled()
{
    m_attempt.probing = true;
    readUpstreamAfresh();
    net::post(m_thread.ioc, recycled([self = shared_from_this(), attempt = m_attemptSerial] {
        if (attempt != self->m_attemptSerial)
            return;  // the probe found the connection stale; another attempt is under way
        self->m_attempt.probing = false;
        if (!self->m_socket.is_open()) {
            self->abandonExchange();
            return;
        }
        self->pumpRequest();
    }));
}

// ---- the response ------------------------------------------------------------

void Session::readResponse()
{
    enter(Phase::AwaitingResponse);
    newResponseParser(Core::equalsIgnoreCase(m_data.view(m_data.method), "HEAD"));
    if (m_attempt.readPending) {
        // probePooled's read waits for the answer; its time starts now.
        armUpstreamTimer(opts().upstreamResponseTimeoutMs);
        return;
    }
    if (m_attempt.readEarly) {
        // It ended while the request was being written (the upstream answered
        // early, or closed): its bytes are in m_upIn already.
        m_attempt.readEarly = false;
        onUpstreamRead(m_attempt.earlyResult, 0);
        return;
    }
    readUpstreamAfresh();
}

// The first read of a response: an empty buffer, reads of the first size.
void Session::readUpstreamAfresh()
{
    m_upIn.clear();
    m_upReadBytes = FirstUpstreamReadBytes;
    readUpstream();
}

void Session::newResponseParser(bool headRequest)
{
    m_response.clear();
    m_responseParser.emplace(m_response);
    m_responseParser->header_limit(std::uint32_t(UpstreamHeaderLimitBytes));
    // Streamed: the length costs no memory. (Not boost::none: Beast 1.74
    // compares a Content-Length with the optional, and anything is > none.)
    m_responseParser->body_limit(std::numeric_limits<std::uint64_t>::max());
    m_responseParser->eager(false);  // the head is looked at before any body is taken
    m_responseParser->skip(headRequest);
}

void Session::readUpstream()
{
    const std::size_t room = std::min(m_upReadBytes, m_upIn.max_size() - m_upIn.size());
    if (room == 0) {
        upstreamBroke(502, "the upstream sent a malformed response");
        return;
    }
    if (!m_attempt.probing)  // a probe runs under the request's write timer, then readResponse's
        armUpstreamTimer(opts().upstreamResponseTimeoutMs);
    m_attempt.readPending = true;
    m_upstream->async_read_some(m_upIn.prepare(room), recycled([self = shared_from_this(), room, attempt = m_attemptSerial](
                                                                   error_code ec, std::size_t n) {
        if (attempt != self->m_attemptSerial)
            return;  // a read of a connection since dropped (closed under it)
        self->m_attempt.readPending = false;
        if (n == room)  // the read filled its buffer: more is coming, read larger pieces
            self->m_upReadBytes = std::min(2 * self->m_upReadBytes, RelayChunkBytes);
        if (self->m_attempt.probing) {
            // Ended before the request was sent: the pooled connection was
            // closed by the upstream, or has stray bytes. Try the next one.
            if (!self->m_socket.is_open()) {
                self->abandonExchange();
                return;
            }
            self->dropUpstream();
            self->connectUpstream(true);
            return;
        }
        if (self->m_phase == Phase::SendingRequest) {
            // The request is still being written: keep what came for readResponse.
            self->m_upIn.commit(n);
            self->m_attempt.readEarly = true;
            self->m_attempt.earlyResult = ec;
            return;
        }
        self->onUpstreamRead(ec, n);
    }));
}

void Session::onUpstreamRead(error_code ec, std::size_t n)
{
    disarmUpstreamTimer();
    if (!m_socket.is_open()) {
        abandonExchange();
        return;
    }
    if (ec == net::error::eof && m_responseParser->is_header_done() && !m_responseParser->is_done()) {
        // A body that ends with the connection (no length, not chunked).
        error_code eofError;
        m_responseParser->put_eof(eofError);
        if (!eofError) {
            relayResponse();
            return;
        }
    }
    if (ec) {
        upstreamBroke(502, "the upstream closed the connection or sent a malformed response");
        return;
    }
    m_upIn.commit(n);
    relayResponse();
}

// Parses what came from the upstream: the head becomes the client's head,
// body pieces are framed into m_out, which is written before reading more.
void Session::relayResponse()
{
    while (!m_responseParser->is_done() && m_upIn.size() > 0) {
        error_code ec;
        const std::size_t used = m_responseParser->put(m_upIn.data(), ec);
        m_upIn.consume(used);
        if (ec == http::error::need_more)
            break;
        if (ec) {
            upstreamBroke(502, "the upstream sent a malformed response");
            return;
        }
        if (m_responseParser->is_header_done() && m_phase == Phase::AwaitingResponse) {
            if (m_response.status == 101) {  // Upgrade is never forwarded: nothing may switch
                upstreamBroke(502, "the upstream switched protocols unasked");
                return;
            }
            if (m_response.status / 100 == 1) {
                // 100 Continue, 103 Early Hints: interim, not relayed; the
                // final response follows on the same connection.
                newResponseParser(m_responseParser->skip());
                continue;
            }
            startClientResponse();
        }
        if (used == 0)
            break;
    }
    if (m_responseParser->is_done()) {
        finishResponse();
        return;
    }
    if (!m_out.empty())
        writeClient(&Session::readUpstream);
    else
        readUpstream();
}

// The client's head from the upstream's: hop-by-hop fields (and those its
// Connection header names) dropped, the rate-limit headers added, the body
// framed for this client: the upstream's Content-Length when it gave one,
// else chunked (HTTP/1.1) or until the connection closes (HTTP/1.0).
void Session::startClientResponse()
{
    enter(Phase::RelayingResponse);
    const ResponseHead& h = m_response;
    const int status = h.status;
    // docs/BACKGROUND.md, cooldown: a cooldown starts only when the action succeeded.
    if (status >= 200 && status < 300)
        m_listener.engine.reportSuccess(m_facts, wallNow());
    const bool http10 = m_data.version < 11;
    std::string& o = m_out;
    o += http10 ? "HTTP/1.0 " : "HTTP/1.1 ";
    appendNumber(o, status);
    o += ' ';
    o += h.view(h.reason);
    o += "\r\n";
    const std::string_view connection = h.header("Connection");
    for (const auto& [n, v] : h.fields) {
        const std::string_view name = h.view(n);
        if (!endsAtThisHop(name, connection))
            appendField(o, name, h.view(v));
    }
    if (m_decision.rateLimitHeadersOnAllowed)
        appendRateLimitHeaders(o, m_decision);
    const auto length = m_responseParser->content_length();
    // HEAD and 304 carry no body but the length a GET would get (RFC 9110
    // §9.3.2, §15.4.5); 204 carries neither.
    const bool noBody = m_responseParser->skip() || status == 204 || status == 304;
    bool chunked = false;
    if (length && status != 204) {
        o += "Content-Length: ";
        appendNumber(o, std::int64_t(*length));
        o += "\r\n";
    } else if (!noBody && !http10) {
        o += "Transfer-Encoding: chunked\r\n";
        chunked = true;
    } else if (!noBody) {
        m_exchange.keepAlive = false;  // HTTP/1.0 and no length: the body ends with the connection
    }
    if (!m_exchange.keepAlive)
        o += "Connection: close\r\n";
    else if (http10)
        o += "Connection: keep-alive\r\n";
    o += "\r\n";
    m_response.bodySink = &m_out;
    m_response.chunkBody = chunked;
}

void Session::finishResponse()
{
    // The upstream connection goes back to the pool when the upstream allows
    // it and nothing unread is left on it.
    if (m_responseParser->keep_alive() && m_upIn.size() == 0 && m_thread.idleUpstream.size() < opts().upstreamPoolPerThread)
        m_thread.idleUpstream.push_back(std::move(*m_upstream));
    else
        dropUpstream();
    m_upstream.reset();
    m_response.bodySink = nullptr;
    writeClient(&Session::forwardDone);
}

// Writes m_out to the client, then goes on with `next`. The write deadline
// guards a client that does not read: the sweeper closes it.
void Session::writeClient(void (Session::*next)())
{
    if (m_out.empty()) {
        (this->*next)();
        return;
    }
    m_deadline.await(Awaiting::Answer);
    m_writeBuffer.swap(m_out);
    m_out.clear();
    net::async_write(m_socket, net::buffer(m_writeBuffer), recycled([self = shared_from_this(), next](error_code ec, std::size_t) {
        self->m_deadline.clear();
        self->m_writeBuffer.clear();
        if (ec) {
            self->abandonExchange();
            return;
        }
        (self.get()->*next)();
    }));
}

// ---- failures ------------------------------------------------------------------

// The upstream connection failed. A pooled connection the upstream closed
// just as it was reused is retried once on a new one when nothing came back
// and the request can be sent again (idempotent, no body: nginx's
// proxy_next_upstream default); otherwise the client gets 502 (504 when it
// was the upstream's time that ran out).
void Session::upstreamBroke(int status, const char* why)
{
    const bool nothingBack = !m_responseParser || !m_responseParser->got_some();
    if (m_attempt.pooled && !m_attempt.timedOut && !m_exchange.requestHasBody && nothingBack && m_phase != Phase::RelayingResponse
        && isIdempotent(m_data.view(m_data.method))) {
        dropUpstream();
        m_responseParser.reset();
        m_upOut.clear();
        appendUpstreamHead(m_upOut);
        connectUpstream(false);
        return;
    }
    if (m_attempt.timedOut)
        upstreamFailed(504, "the upstream did not answer in time");
    else
        upstreamFailed(status, why);
}

void Session::upstreamFailed(int status, const char* why)
{
    dropUpstream();
    if (m_listener.metrics)
        m_listener.metrics->upstreamErrors.fetch_add(1, std::memory_order_relaxed);
    if (m_phase == Phase::RelayingResponse) {
        // The head is gone: the only way left to say "incomplete" is to close.
        abandonExchange();
        return;
    }
    enter(Phase::AnsweringHere);  // Floodgate's own answer, instead of the upstream's
    if (m_listener.metrics)
        m_listener.metrics->countHttpError(m_thread.index, status);
    m_data.bodySink = nullptr;
    if (!m_parser->is_done())
        m_exchange.keepAlive = false;  // the rest of the request body was never read
    appendErrorResponse(m_out, status, why, !m_exchange.keepAlive, m_data.version < 11);
    writeClient(&Session::forwardDone);
}

// The client went away, stopped reading, or can only be told by a close.
void Session::abandonExchange()
{
    dropUpstream();
    close();
}

void Session::dropUpstream()
{
    ++m_attemptSerial;  // a read still pending on it ends aborted, and is ignored
    if (m_upstream) {
        error_code ignored;
        m_upstream->close(ignored);
        m_upstream.reset();
    }
}

// The upstream's time for the step in hand. Arming and disarming only move
// m_upstreamDeadline: the timer waits once and, when it fires before the
// deadline (which moved later meanwhile), waits again for the rest. So a
// proxied request's steps (write, then read) start and cancel no timer
// operation each; the timer is set anew only when a deadline comes before
// the wait's end (a connect timeout shorter than the response timeout).
void Session::armUpstreamTimer(Millis ms)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    m_upstreamDeadline = deadline;
    if (m_upstreamTimerWaiting && m_upstreamTimer.expiry() <= deadline)
        return;
    waitForUpstreamDeadline();
}

void Session::waitForUpstreamDeadline()
{
    m_upstreamTimerWaiting = true;
    m_upstreamTimer.expires_at(m_upstreamDeadline);  // a wait pending ends aborted, its generation stale
    m_upstreamTimer.async_wait(recycled([self = shared_from_this(), generation = ++m_timerGeneration](error_code ec) {
        if (generation != self->m_timerGeneration)
            return;  // replaced by a wait that ends sooner
        self->m_upstreamTimerWaiting = false;
        if (ec || self->m_upstreamDeadline == std::chrono::steady_clock::time_point{})
            return;  // cancelled (the connection closed), or no step is timed now
        if (std::chrono::steady_clock::now() < self->m_upstreamDeadline) {
            self->waitForUpstreamDeadline();  // the deadline moved on
            return;
        }
        // Out of time: closing the socket ends the pending operation, whose
        // handler answers 504 (or closes, once the head was relayed).
        self->m_upstreamDeadline = {};
        self->m_attempt.timedOut = true;
        if (self->m_upstream) {
            error_code ignored;
            self->m_upstream->close(ignored);
        }
    }));
}

void Session::disarmUpstreamTimer()
{
    m_upstreamDeadline = {};
}

// A keep-alive connection waits without the relay buffers a large body grew
// (10,000 idle connections must not each keep a few hundred KiB).
void Session::releaseRelayBuffers()
{
    constexpr std::size_t keep = 16 * 1024;
    for (std::string* s : {&m_out, &m_writeBuffer, &m_upOut})
        if (s->capacity() > keep)
            std::string().swap(*s);
    if (m_upIn.capacity() > keep)
        m_upIn.shrink_to_fit();
    if (m_buffer.capacity() > keep + opts().headerLimitBytes)
        m_buffer.shrink_to_fit();
}

void Session::forwardDone()
{
    enter(Phase::Done);
    m_data.bodySink = nullptr;
    releaseRelayBuffers();
    if (!m_exchange.keepAlive || ending() || !m_socket.is_open()) {
        close();
        return;
    }
    newRequest();
    if (m_buffer.size() > 0)
        process();
    else
        read();
}

} // namespace Floodgate::Http
