// SPDX-License-Identifier: GPL-3.0-or-later
// Inside the traffic listener: one connection (Session), its thread, the
// request and response parsers. Private to fg_http: only Listener.cpp
// (accepting, stopping), RequestParser.cpp, Session.cpp (deciding,
// answering), Forwarder.cpp and ForwardHead.cpp (proxy mode) include it, so
// Boost stays out of the headers everyone else reads.
//
// A session's states. A connection does one thing at a time: it reads from
// its client, writes to it, or (proxy mode) works with the upstream. Where
// it stands is two enums; the rest are facts about the request in hand
// (ExchangeFacts, UpstreamAttempt), reset when a request or an attempt begins.
//
// Phase, the request in hand (m_phase; changed only by Session::enter(),
// which asserts that the edge is one of isTransition()'s):
//
//   Done --> ReadingHead --> AnsweringHere --> Done
//                             ^     |
//                             |     v  a cluster node that must wait for Redis (docs/CLUSTER.md)
//                           AwaitingCluster
//                                 | allowed, proxy mode
//                                 v
//                           ForwardQueued --> Connecting --> SendingRequest --> AwaitingResponse --> RelayingResponse --> Done
//
//   and the edges back:
//     Connecting, SendingRequest, AwaitingResponse --> AnsweringHere: Floodgate answers after all, with
//         502/504 when the upstream failed before its head (then Done), with 400/413 when the
//         client's body is malformed (then a close)
//     SendingRequest, AwaitingResponse --> Connecting: the one retry on a new connection, when a pooled
//         one was closed under it (nothing came back, an idempotent method, no body)
//     Done --> ReadingHead: newRequest(), unless the connection closes instead
//
// Ending, how the connection ends (m_ending; set in any phase, it only moves
// rightwards, Draining may be skipped):
//
//   KeepOpen --> Draining --> AfterWrite
//     Draining: stop() asked; the request in hand is finished, no other begins.
//     AfterWrite: an error answer, an answer that says "Connection: close", a
//     refusal whose body stays unread: the connection closes once the queued
//     answer is written.
//
// Closed is not a state of its own: close() comes in any phase (the deadline
// sweep, stop(), an I/O error) and every pending handler sees m_socket closed.
// A write to the client is in flight while m_writeBuffer holds its bytes.
#pragma once

#include <utility>  // before Asio: Boost 1.74 + GCC 12 in C++20 need std::exchange declared first

#include "http/Deadlines.h"
#include "http/HandlerMemory.h"
#include "core/Engine.h"
#include "http/Peer.h"
#include "http/Listener.h"
#include "core/Rules.h"
#include "core/Target.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace Floodgate::Http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using Core::Millis;

// Bodies are relayed through buffers of this size in both directions: a
// proxied connection holds at most a few of them, whatever the body's length.
inline constexpr std::size_t RelayChunkBytes = 64 * 1024;
// A response is read in pieces of this size first, doubling up to
// RelayChunkBytes while reads fill them: a small answer needs a small buffer,
// kept from request to request (releaseRelayBuffers keeps up to 16 KiB), where
// reading 64 KiB at once would allocate and free that much per request.
inline constexpr std::size_t FirstUpstreamReadBytes = 8 * 1024;
inline constexpr std::size_t UpstreamHeaderLimitBytes = 64 * 1024;

inline std::string_view trimView(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

// One piece of a body on its way on: as it is, or as one chunk.
inline void appendBodyPiece(std::string& out, std::string_view piece, bool chunked)
{
    if (piece.empty())
        return;
    if (chunked) {
        char hex[20];
        const auto [end, ec] = std::to_chars(hex, hex + sizeof hex, piece.size(), 16);
        out.append(hex, end);
        out += "\r\n";
        out += piece;
        out += "\r\n";
        return;
    }
    out += piece;
}

// A message head in storage reused from message to message (cleared,
// capacity kept: no allocation once warm), and where its body goes.
struct HeaderStore {
    std::string storage;  // the start line's parts and every field, back to back
    struct Span {
        std::uint32_t offset = 0;
        std::uint32_t length = 0;
    };
    std::vector<std::pair<Span, Span>> fields;
    unsigned version = 11;
    // Body bytes are appended here (framed as chunks when asked) and the
    // last chunk when the message ends; null: the body is read and dropped.
    std::string* bodySink = nullptr;
    bool chunkBody = false;

    void clearHead()
    {
        storage.clear();
        fields.clear();
        version = 11;
    }
    Span keep(std::string_view s)
    {
        Span sp{std::uint32_t(storage.size()), std::uint32_t(s.size())};
        storage.append(s);
        return sp;
    }
    std::string_view view(Span s) const { return std::string_view(storage).substr(s.offset, s.length); }
    std::string_view header(std::string_view name) const
    {
        for (const auto& [n, v] : fields)
            if (Core::equalsIgnoreCase(view(n), name))
                return view(v);
        return {};
    }
    void bodyPiece(std::string_view piece)
    {
        if (bodySink)
            appendBodyPiece(*bodySink, piece, chunkBody);
    }
    void bodyEnd()
    {
        if (bodySink && chunkBody)
            *bodySink += "0\r\n\r\n";
    }
};

// Everything one request needs after parsing.
struct RequestData : HeaderStore {
    Span method, target;
    std::vector<Core::HeaderField> views;  // built once the header is complete
    int contentLengthCount = 0;
    int transferEncodingCount = 0;
    int hostCount = 0;
    Span transferEncoding;
    Span host;
    int rejectStatus = 0;  // set by our own checks: 400, 431, 501
    std::string rejectReason;
    std::size_t maxFields = 100;
    std::size_t headerLimit = 8 * 1024;

    void clear()
    {
        clearHead();
        views.clear();
        contentLengthCount = transferEncodingCount = hostCount = 0;
        transferEncoding = host = {};
        rejectStatus = 0;
        rejectReason.clear();
        bodySink = nullptr;
        chunkBody = false;
    }
    // Every value of a repeatable header, joined with ", " (X-Forwarded-For may come twice).
    std::string joined(std::string_view name) const
    {
        std::string out;
        for (const auto& [n, v] : fields) {
            if (!Core::equalsIgnoreCase(view(n), name))
                continue;
            if (!out.empty())
                out += ", ";
            out += view(v);
        }
        return out;
    }
    void buildViews()
    {
        views.clear();
        for (const auto& [n, v] : fields)
            views.push_back({view(n), view(v)});
    }
};

// What both parsers do with a body: each piece to the store's sink (framed
// as a chunk when asked), the last chunk when the message ends.
template<bool isRequest>
class RelayingParser : public http::basic_parser<isRequest> {
protected:
    explicit RelayingParser(HeaderStore& store) : m_store(store) {}

    void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
    std::size_t on_body_impl(beast::string_view body, error_code&) override
    {
        m_store.bodyPiece(std::string_view(body.data(), body.size()));
        return body.size();
    }
    void on_chunk_header_impl(std::uint64_t, beast::string_view, error_code&) override {}
    std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, error_code&) override
    {
        m_store.bodyPiece(std::string_view(body.data(), body.size()));
        return body.size();
    }
    void on_finish_impl(error_code&) override { m_store.bodyEnd(); }

private:
    HeaderStore& m_store;
};

// Copies what the engine needs into RequestData, counts fields and judges
// the header for smuggling and HTTP's musts.
class RequestParser final : public RelayingParser<true> {
public:
    explicit RequestParser(RequestData& data) : RelayingParser(data), m_data(data) {}

private:
    void on_request_impl(http::verb, beast::string_view method, beast::string_view target, int version, error_code&) override;
    void on_response_impl(int, beast::string_view, int, error_code&) override {}
    void on_field_impl(http::field f, beast::string_view name, beast::string_view value, error_code& ec) override;
    void on_header_impl(error_code& ec) override;
    bool isFolded(std::string_view name, std::string_view value) const;

    RequestData& m_data;
};

// The status for a request parse failure, and why.
int statusFor(const error_code& ec, const RequestData& data, const beast::flat_buffer& buffer, std::size_t headerLimit,
              std::string& why);

// The upstream's answer: status line and fields kept, the body streamed to
// the sink piece by piece.
struct ResponseHead : HeaderStore {
    int status = 0;
    Span reason;

    void clear()
    {
        clearHead();
        status = 0;
        reason = {};
        bodySink = nullptr;
        chunkBody = false;
    }
};

class ResponseParser final : public RelayingParser<false> {
public:
    explicit ResponseParser(ResponseHead& head) : RelayingParser(head), m_head(head) {}

private:
    void on_request_impl(http::verb, beast::string_view, beast::string_view, int, error_code&) override {}
    void on_response_impl(int code, beast::string_view reason, int version, error_code&) override
    {
        m_head.status = code;
        m_head.reason = m_head.keep(std::string_view(reason.data(), reason.size()));
        m_head.version = unsigned(version);
    }
    void on_field_impl(http::field, beast::string_view name, beast::string_view value, error_code&) override
    {
        if (is_header_done())
            return;  // an upstream's trailer: the head is already relayed; views into it must stay put
        const auto n = m_head.keep(std::string_view(name.data(), name.size()));
        m_head.fields.emplace_back(n, m_head.keep(std::string_view(value.data(), value.size())));
    }
    void on_header_impl(error_code&) override {}

    ResponseHead& m_head;
};

// ---- threads, sessions ---------------------------------------------------------

class Session;

struct ThreadContext {
    ThreadContext(std::size_t i, const Core::Clock& c) : index(i), clock(c), acceptor(ioc), sweeper(ioc), acceptRetry(ioc) {}
    std::size_t index;
    HandlerClock clock;  // the listener's clock, read once per handler by this thread's sessions
    HandlerMemory handlerMemory;  // before ioc: pending operations give their blocks back when it is destroyed
    // One thread runs it, and every socket and timer on it is used from that
    // thread (or before it starts and after it ends): the reactor's lock per
    // socket can go. The scheduler keeps its lock, for stop()'s posts from
    // another thread.
    net::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
    tcp::acceptor acceptor;
    net::steady_timer sweeper;
    net::steady_timer acceptRetry;
    std::list<Session*> sessions;  // this thread's connections, for deadlines and shutdown
    std::vector<tcp::socket> idleUpstream;  // keep-alive connections to the upstream
    std::vector<tcp::endpoint> upstreamEndpoints;
    std::thread thread;
    // This thread's copy of the trusted proxies, refreshed when their
    // version moves (one relaxed load per request otherwise).
    std::shared_ptr<const TrustedProxies> proxies;
    std::uint64_t proxiesVersion = 0;
};

struct Listener::Impl {
    Core::Engine& engine;
    ListenerOptions options;
    const Core::Clock& clock;
    ClientTimeouts timeouts;
    LimiterLog* log;
    ListenerMetrics* metrics;
    RequestSamples* samples = nullptr;
    std::vector<std::unique_ptr<ThreadContext>> threads;
    std::vector<net::executor_work_guard<net::io_context::executor_type>> workGuards;
    std::atomic<std::uint16_t> port{0};  // read by the console's snapshot thread
    std::atomic<bool> stopping{false};
    // Live sessions on every thread: the connection cap (with or without a
    // metrics object) and stop()'s "is anyone still busy".
    std::atomic<std::int64_t> openSessions{0};
    bool started = false;
    std::mutex proxiesMutex;
    std::shared_ptr<const TrustedProxies> proxies;
    std::atomic<std::uint64_t> proxiesVersion{1};

    const TrustedProxies& trusted(ThreadContext& t)
    {
        const std::uint64_t v = proxiesVersion.load(std::memory_order_acquire);
        if (t.proxiesVersion != v) {
            std::lock_guard lock(proxiesMutex);
            t.proxies = proxies;
            t.proxiesVersion = proxiesVersion.load(std::memory_order_relaxed);
        }
        return *t.proxies;
    }

    Impl(Core::Engine& e, ListenerOptions o, LimiterLog* l, ListenerMetrics* m, const Core::Clock& c)
        : engine(e)
        , options(std::move(o))
        , clock(c)
        , timeouts(ClientTimeouts::of(options))
        , log(l)
        , metrics(m)
        , proxies(std::make_shared<const TrustedProxies>(options.trustedProxies))
    {
    }

    void accept(ThreadContext& t);
    void sweep(ThreadContext& t);
};

// Proxy mode's field rules (ForwardHead.cpp), for both directions: a field
// that ends at this hop (hop-by-hop, named in Connection, or Content-Length:
// the body is framed anew), and one "Name: value" line.
bool endsAtThisHop(std::string_view name, std::string_view connection);
void appendField(std::string& out, std::string_view name, std::string_view value);

// Where the request in hand stands; the diagram at the top of this file.
enum class Phase : std::uint8_t {
    Done,              // nothing in hand: a new connection, or an exchange that is over
    ReadingHead,       // a request's head is being read; nothing is decided
    AnsweringHere,     // decided, answered by Floodgate itself (decision mode, a refusal, an error); a body is read and dropped
    AwaitingCluster,   // a cluster node waits (at most Tuning::clusterWaitMicros) for Redis to acknowledge this client's earlier requests
    ForwardQueued,     // allowed in proxy mode: what was queued before it (answers, 100 Continue) is written first
    Connecting,        // proxy mode: a pooled upstream connection taken, or a new one made
    SendingRequest,    // the head to the upstream, then the client's body piece by piece
    AwaitingResponse,  // the request is sent: the upstream's final head is awaited (interim 1xx dropped)
    RelayingResponse,  // the client has the head, the body streams to it; a failure can only close
};

// The diagram's edges: every change of phase is one of them.
constexpr bool isTransition(Phase from, Phase to)
{
    switch (to) {
    case Phase::Done: return from == Phase::AnsweringHere || from == Phase::RelayingResponse;
    case Phase::ReadingHead: return from == Phase::Done;
    case Phase::AnsweringHere:
        return from == Phase::ReadingHead || from == Phase::AwaitingCluster || from == Phase::Connecting || from == Phase::SendingRequest
            || from == Phase::AwaitingResponse;
    case Phase::AwaitingCluster: return from == Phase::AnsweringHere;
    case Phase::ForwardQueued: return from == Phase::AnsweringHere;
    case Phase::Connecting: return from == Phase::ForwardQueued || from == Phase::SendingRequest || from == Phase::AwaitingResponse;
    case Phase::SendingRequest: return from == Phase::Connecting;
    case Phase::AwaitingResponse: return from == Phase::SendingRequest;
    case Phase::RelayingResponse: return from == Phase::AwaitingResponse;
    }
    return false;
}

// How the connection ends; the diagram at the top of this file. It only
// moves down this list: a stop, or an answer after which the connection
// closes, can come in any phase.
enum class Ending : std::uint8_t {
    KeepOpen,    // another request may follow the one in hand
    Draining,    // stop() asked: the request in hand is finished, none begins after it
    AfterWrite,  // the last answer is queued: the connection closes once it is written
};

// What is known about the request in hand: facts, not phases. Reset
// together when a request begins (Session::newRequest), so nothing carries
// over from one request to the next.
struct ExchangeFacts {
    bool trustedPeer = false;     // the peer is a trusted proxy (as of this request's decision)
    bool keepAlive = true;        // the answer leaves the connection open: the client asked, and nothing since said otherwise
    bool requestHasBody = false;  // proxy mode: a body follows the head to the upstream
};

// One connection to the upstream for the request in hand (proxy mode):
// reset on every attempt (Session::connectUpstream), a retry included.
struct UpstreamAttempt {
    bool pooled = false;    // taken from the keep-alive pool rather than connected anew
    bool timedOut = false;  // the upstream timer fired: its pending operation was cut off
    // A pooled connection, for a request without a body, is checked by
    // starting the read of the response before the request is sent
    // (Forwarder.cpp, probePooled): that read's first try is the check.
    bool probing = false;      // the read is started, the request not yet: whatever it gets, the connection is stale
    bool readPending = false;  // a read from the upstream is under way
    bool readEarly = false;    // that read ended while the request was still being written; its bytes are in m_upIn
    error_code earlyResult;    // and how it ended
};

// One client connection; lives on one thread. Decision mode and refusals
// are answered in Session.cpp; an allowed request in proxy mode is relayed
// by Forwarder.cpp, one bounded piece at a time in each direction.
class Session : public std::enable_shared_from_this<Session> {
public:
    Session(Listener::Impl& listener, ThreadContext& thread, tcp::socket socket);
    ~Session();

    void start();
    // Called by the sweeper: past its deadline, the connection is closed (a
    // slowloris header, an idle keep-alive, a stuck write, a body that stopped).
    void expireIfDue(Millis now);
    // Graceful stop (Ending::Draining): a connection with no request in hand
    // and nothing buffered closes now; one with a request in hand finishes it.
    void shutdown();
    void close();

private:
    const ListenerOptions& opts() const { return m_listener.options; }
    // Wall time, for the engine and the records (deadlines read the clock's
    // monotonic time through m_deadline), once per handler (HandlerClock.h).
    Millis wallNow() const { return m_thread.clock.now(); }
    const TrustedProxies& trusted() { return m_listener.trusted(m_thread); }
    // A completion handler whose operation's memory is this thread's,
    // recycled, and that reads the clock once (HandlerClock.h).
    template<class Handler>
    Recycled<Handler> recycled(Handler handler)
    {
        return Recycled<Handler>(m_thread.handlerMemory, m_thread.clock, std::move(handler));
    }

    // The one way the phase changes.
    void enter(Phase next)
    {
        assert(isTransition(m_phase, next));
        m_phase = next;
    }
    // A request is decided and not yet answered in full: a graceful stop lets it finish.
    bool inHand() const { return m_phase != Phase::Done && m_phase != Phase::ReadingHead; }
    bool writing() const { return !m_writeBuffer.empty(); }

    // The connection's end (never moves back): no request begins after the
    // one in hand, or it closes as soon as its last answer is written.
    void endWith(Ending e) { m_ending = std::max(m_ending, e); }
    bool ending() const { return m_ending != Ending::KeepOpen; }
    bool closeAfterWrite() const { return m_ending == Ending::AfterWrite; }

    // ---- reading, deciding, answering (Session.cpp) ----------------------------
    void newRequest();
    void read();
    void onRead(error_code ec, std::size_t n);
    void process();
    bool decideAtHeader(Millis now);
    bool decideNow(Millis now);
    void awaitCluster();
    void useTargetAuthorityAsHost();
    void respondDecision();
    void finishRequest();
    void fail(int status, const std::string& why);
    void flush();
    void onWrite(error_code ec);

    // ---- proxy mode (Forwarder.cpp) --------------------------------------------
    void startForward();
    void appendUpstreamHead(std::string& r);
    void appendForwardingHeaders(std::string& r, std::string_view host, std::string_view forwardedHost, std::string_view proto);
    void connectUpstream(bool pooledAllowed);
    void pumpRequest();
    void readRequestBody();
    void writeUpstream();
    void readResponse();
    void newResponseParser(bool headRequest);
    void probePooled();
    void readUpstream();
    void readUpstreamAfresh();
    void onUpstreamRead(error_code ec, std::size_t n);
    void relayResponse();
    void startClientResponse();
    void finishResponse();
    void writeClient(void (Session::*next)());
    void upstreamBroke(int status, const char* why);
    void upstreamFailed(int status, const char* why);
    void abandonExchange();
    void dropUpstream();
    void armUpstreamTimer(Millis ms);
    void disarmUpstreamTimer();
    void waitForUpstreamDeadline();
    void releaseRelayBuffers();
    void forwardDone();

    Listener::Impl& m_listener;
    ThreadContext& m_thread;
    tcp::socket m_socket;
    Core::IpAddress m_peer;
    beast::flat_buffer m_buffer;
    RequestData m_data;
    std::optional<RequestParser> m_parser;
    Core::RequestFacts m_facts;
    Core::NormalisedTarget m_target;  // the request's target, as decided on and forwarded
    Core::Decision m_decision;
    std::string m_xff;        // the chain trusted proxies reported, as an X-Forwarded-For value (empty from anyone else)
    std::string m_forwarded;  // a trusted Forwarded header, when that is the --real-ip-header
    std::string m_out;          // bytes queued for the client
    std::string m_writeBuffer;  // the bytes of the client write in flight; empty: none is
    std::list<Session*>::iterator m_self;
    ClientDeadline m_deadline;
    // The states (the diagram at the top of this file) and the request's facts.
    Phase m_phase = Phase::Done;  // start() begins the first request
    Ending m_ending = Ending::KeepOpen;
    ExchangeFacts m_exchange;

    // The exchange with the upstream (proxy mode).
    std::optional<tcp::socket> m_upstream;
    net::steady_timer m_clusterTimer;  // AwaitingCluster: when to ask the engine again
    std::chrono::steady_clock::time_point m_clusterWaitSince;
    net::steady_timer m_upstreamTimer;
    std::uint64_t m_timerGeneration = 0;  // a wait replaced by a sooner one is stale
    bool m_upstreamTimerWaiting = false;
    std::chrono::steady_clock::time_point m_upstreamDeadline;  // the step in hand's; zero: none is timed
    UpstreamAttempt m_attempt;
    std::uint64_t m_attemptSerial = 0;  // moves on each attempt and each dropped connection: a read of an earlier one is stale
    std::string m_upOut;              // request bytes on their way to the upstream
    beast::flat_buffer m_upIn;        // response bytes from the upstream
    std::size_t m_upReadBytes = FirstUpstreamReadBytes;  // the next read's size
    ResponseHead m_response;
    std::optional<ResponseParser> m_responseParser;
};

} // namespace Floodgate::Http
