// SPDX-License-Identifier: MIT
// The traffic listener on Boost.Beast + Asio. One io_context per I/O thread,
// each with its own SO_REUSEPORT acceptor (the kernel spreads connections),
// so a connection lives on one thread and needs no strand or lock. Requests
// are parsed by a Beast basic_parser that copies what the engine needs into
// per-connection storage reused from request to request; the engine is
// called inline; responses are written by hand and batched when pipelined.
#include <utility>  // before Asio: Boost 1.74 + GCC 12 in C++20 need std::exchange declared first

#include "Listener.h"

#include "Engine.h"
#include "LimiterLog.h"
#include "Metrics.h"
#include "Peer.h"
#include "RequestSamples.h"
#include "Responses.h"
#include "Rules.h"
#include "Target.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <list>
#include <mutex>
#include <thread>

namespace Floodgate::Http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using Core::Millis;

namespace {

Millis wallMs()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string_view trimView(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

bool isHopByHop(std::string_view name)
{
    static constexpr std::string_view HOP[] = {"connection", "keep-alive", "proxy-connection", "te", "trailer",
                                               "transfer-encoding", "upgrade", "proxy-authenticate", "proxy-authorization"};
    for (auto h : HOP)
        if (Core::equalsIgnoreCase(name, h))
            return true;
    return false;
}

bool listContainsToken(std::string_view list, std::string_view token)
{
    while (!list.empty()) {
        const auto comma = list.find(',');
        if (Core::equalsIgnoreCase(trimView(list.substr(0, comma)), token))
            return true;
        if (comma == std::string_view::npos)
            break;
        list.remove_prefix(comma + 1);
    }
    return false;
}

// Headers an upstream may take as the truth about the client or the original
// request. Floodgate writes the first kind itself (from what a trusted proxy
// said, and the peer); the second passes only from a trusted proxy.
enum class Forwarding { Other, Written, TrustedOnly };

Forwarding forwardingHeader(std::string_view name)
{
    static constexpr std::string_view WRITTEN[] = {"x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-real-ip", "forwarded"};
    static constexpr std::string_view TRUSTED_ONLY[] = {"x-client-ip",    "true-client-ip",    "cf-connecting-ip", "x-cluster-client-ip",
                                                        "fastly-client-ip", "x-original-uri", "x-original-url",   "x-original-method",
                                                        "x-rewrite-url"};
    for (auto w : WRITTEN)
        if (Core::equalsIgnoreCase(name, w))
            return Forwarding::Written;
    if (name.size() > 12 && Core::equalsIgnoreCase(name.substr(0, 12), "x-forwarded-"))
        return Forwarding::TrustedOnly;  // -port, -prefix, -server, -ssl, -uri, -method...
    for (auto t : TRUSTED_ONLY)
        if (Core::equalsIgnoreCase(name, t))
            return Forwarding::TrustedOnly;
    return Forwarding::Other;
}

// A Forwarded parameter value: a token as it is, anything else quoted.
void appendForwardedValue(std::string& out, std::string_view v)
{
    const bool token = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    });
    if (token) {
        out += v;
        return;
    }
    out += '"';
    for (char c : v) {
        if (c == '"' || c == '\\')
            out += '\\';
        out += c;
    }
    out += '"';
}

// ---- the request -----------------------------------------------------------

// Everything one request needs after parsing, in storage reused across the
// requests of a connection (cleared, capacity kept: no allocation once warm).
struct RequestData {
    std::string storage;  // method, target and every field, back to back
    struct Span {
        std::uint32_t offset = 0;
        std::uint32_t length = 0;
    };
    Span method, target;
    std::vector<std::pair<Span, Span>> fields;
    std::vector<Core::HeaderField> views;  // built once the header is complete
    unsigned version = 11;
    int contentLengthCount = 0;
    int transferEncodingCount = 0;
    int hostCount = 0;
    Span transferEncoding;
    Span host;
    int rejectStatus = 0;  // set by our own checks: 400, 431, 501
    std::string rejectReason;
    std::string body;
    bool keepBody = false;
    std::size_t maxFields = 100;
    std::size_t headerLimit = 8 * 1024;

    void clear()
    {
        storage.clear();
        fields.clear();
        views.clear();
        version = 11;
        contentLengthCount = transferEncodingCount = hostCount = 0;
        transferEncoding = host = {};
        rejectStatus = 0;
        rejectReason.clear();
        body.clear();
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

class RequestParser final : public http::basic_parser<true> {
public:
    explicit RequestParser(RequestData& data) : m_data(data) {}

private:
    void on_request_impl(http::verb, beast::string_view method, beast::string_view target, int version, error_code&) override
    {
        m_data.method = m_data.keep(std::string_view(method.data(), method.size()));
        m_data.target = m_data.keep(std::string_view(target.data(), target.size()));
        m_data.version = unsigned(version);
    }
    void on_response_impl(int, beast::string_view, int, error_code&) override {}
    void on_field_impl(http::field f, beast::string_view name, beast::string_view value, error_code& ec) override
    {
        // A trailer field (after a chunked body) arrives here too. The
        // request was decided on its header, whose views point into this
        // storage: a trailer must neither move that storage (a use after
        // free, found by fuzz_listener) nor reach the upstream as if it were
        // a header, so it is dropped, as RFC 9110 section 6.5.1 allows.
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
    bool isFolded(std::string_view name, std::string_view value) const
    {
        const auto nameEnd = reinterpret_cast<std::uintptr_t>(name.data() + name.size());
        const auto valueStart = reinterpret_cast<std::uintptr_t>(value.data());
        if (valueStart < nameEnd || valueStart - nameEnd > m_data.headerLimit)
            return true;
        const std::string_view gap(name.data() + name.size(), valueStart - nameEnd);
        return gap.find_first_of("\r\n") != std::string_view::npos;
    }
    void on_header_impl(error_code& ec) override
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
    void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
    std::size_t on_body_impl(beast::string_view body, error_code&) override
    {
        if (m_data.keepBody)
            m_data.body.append(body.data(), body.size());
        return body.size();
    }
    void on_chunk_header_impl(std::uint64_t, beast::string_view, error_code&) override {}
    std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, error_code&) override
    {
        if (m_data.keepBody)
            m_data.body.append(body.data(), body.size());
        return body.size();
    }
    void on_finish_impl(error_code&) override {}

    RequestData& m_data;
};

// The status for a parse failure.
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

// ---- upstream URL ------------------------------------------------------------

std::optional<UpstreamUrl> UpstreamUrl::parse(std::string_view url, std::string* why)
{
    auto fail = [&](std::string reason) -> std::optional<UpstreamUrl> {
        if (why)
            *why = std::move(reason);
        return std::nullopt;
    };
    UpstreamUrl u;
    u.text = std::string(url);
    if (url.starts_with("https://"))
        return fail("https upstreams are not supported: terminate TLS in front of Floodgate and use http://");
    if (!url.starts_with("http://"))
        return fail("the upstream must be an http:// URL");
    url.remove_prefix(7);
    const auto slash = url.find('/');
    std::string_view hostPort = url.substr(0, slash);
    if (slash != std::string_view::npos) {
        u.basePath = std::string(url.substr(slash));
        while (!u.basePath.empty() && u.basePath.back() == '/')
            u.basePath.pop_back();
    }
    if (hostPort.empty())
        return fail("the upstream URL has no host");
    std::string_view portText;
    if (hostPort.front() == '[') {
        const auto close = hostPort.find(']');
        if (close == std::string_view::npos)
            return fail("missing ']' in the upstream host");
        u.host = std::string(hostPort.substr(1, close - 1));
        if (close + 1 < hostPort.size()) {
            if (hostPort[close + 1] != ':')
                return fail("unexpected text after the upstream host");
            portText = hostPort.substr(close + 2);
        }
    } else {
        const auto colon = hostPort.rfind(':');
        u.host = std::string(hostPort.substr(0, colon));
        if (colon != std::string_view::npos)
            portText = hostPort.substr(colon + 1);
    }
    if (u.host.empty())
        return fail("the upstream URL has no host");
    if (!portText.empty()) {
        unsigned p = 0;
        auto [ptr, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), p);
        if (ec != std::errc() || ptr != portText.data() + portText.size() || p == 0 || p > 65535)
            return fail("the upstream port \"" + std::string(portText) + "\" is not a port number");
        u.port = std::uint16_t(p);
    }
    u.hostHeader = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
    if (u.port != 80)
        u.hostHeader += ":" + std::to_string(u.port);
    return u;
}

// ---- threads, sessions ---------------------------------------------------------

class Session;

struct ThreadContext {
    explicit ThreadContext(std::size_t i) : index(i), acceptor(ioc), sweeper(ioc), acceptRetry(ioc) {}
    std::size_t index;
    net::io_context ioc{1};
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

    Impl(Core::Engine& e, ListenerOptions o, LimiterLog* l, ListenerMetrics* m)
        : engine(e), options(std::move(o)), log(l), metrics(m), proxies(std::make_shared<const TrustedProxies>(options.trustedProxies))
    {
    }

    void accept(ThreadContext& t);
    void sweep(ThreadContext& t);
};

class Session : public std::enable_shared_from_this<Session> {
public:
    Session(Listener::Impl& listener, ThreadContext& thread, tcp::socket socket)
        : m_listener(listener)
        , m_thread(thread)
        , m_socket(std::move(socket))
        , m_buffer(listener.options.headerLimitBytes + 64 * 1024)
        , m_upstreamTimer(thread.ioc)
    {
        error_code ec;
        const auto ep = m_socket.remote_endpoint(ec);
        m_peer = ec ? Core::IpAddress() : toIp(ep.address());
        m_socket.set_option(tcp::no_delay(true), ec);
        m_data.maxFields = listener.options.maxHeaderFields;
        m_data.headerLimit = listener.options.headerLimitBytes;
        m_data.keepBody = listener.options.upstream.has_value();
    }

    ~Session()
    {
        m_thread.sessions.erase(m_self);
        m_listener.openSessions.fetch_sub(1, std::memory_order_acq_rel);  // taken by accept()
        if (m_listener.metrics)
            m_listener.metrics->openConnections.fetch_sub(1, std::memory_order_relaxed);
    }

    void start()
    {
        m_thread.sessions.push_front(this);
        m_self = m_thread.sessions.begin();
        if (m_listener.metrics)
            m_listener.metrics->openConnections.fetch_add(1, std::memory_order_relaxed);
        newRequest();
        read();
    }

    // Called by the sweeper: past its deadline, the connection is closed
    // (a slowloris header, an idle keep-alive, a stuck write).
    void expireIfDue(Millis now)
    {
        if (m_deadline != 0 && now >= m_deadline && !m_forwarding)
            close();
    }

    // Graceful stop: idle connections close now; busy ones finish the request in hand.
    void shutdown()
    {
        m_stopping = true;
        if (!m_busy && m_buffer.size() == 0)
            close();
    }

    void close()
    {
        error_code ec;
        m_socket.shutdown(tcp::socket::shutdown_both, ec);
        m_socket.close(ec);
        m_deadline = 0;
        m_upstreamTimer.cancel();
        if (m_upstream)
            m_upstream->close(ec);
    }

    // Upstream deadline passed while forwarding: 504.
    void upstreamTimedOut();

private:
    const ListenerOptions& opts() const { return m_listener.options; }
    const TrustedProxies& trusted() { return m_listener.trusted(m_thread); }

    void newRequest()
    {
        m_data.clear();
        m_parser.emplace(m_data);
        m_parser->header_limit(std::uint32_t(opts().headerLimitBytes));
        m_parser->body_limit(opts().bodyLimitBytes);
        m_parser->eager(false);
        m_decided = false;
        m_requestStarted = 0;
    }

    void read()
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

    void onRead(error_code ec, std::size_t n)
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
    void process()
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
            if (!m_parser->is_done()) {
                if (progress && m_buffer.size() > 0)
                    continue;
                break;  // need more bytes
            }
            if (m_forwardPending) {
                if (m_out.empty())
                    startForward();
                else
                    flush();  // earlier answers (or 100 Continue) first; onWrite starts the forward
                return;
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
    // false when the connection is done with (a refusal with a body to skip).
    bool decideAtHeader(Millis now)
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
    void useTargetAuthorityAsHost()
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

    void respondDecision()
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
    void finishRequest()
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

    void fail(int status, const std::string& why)
    {
        if (m_listener.metrics)
            m_listener.metrics->countHttpError(m_thread.index, status);
        appendErrorResponse(m_out, status, why, true, m_data.version < 11 && m_parser->is_header_done());
        m_closeAfterWrite = true;
        flush();
    }

    void flush()
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

    void onWrite(error_code ec)
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
        if (m_forwardPending && m_parser->is_done()) {
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

    // ---- proxy mode ------------------------------------------------------------

    void startForward();
    void appendForwardingHeaders(std::string& r, std::string_view host, std::string_view forwardedHost, std::string_view proto);
    void sendUpstream(bool reused);
    void onUpstreamResponse(error_code ec, bool reused);
    void upstreamFailed(int status, const char* why);
    void relayUpstream();
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
    std::string m_out;
    std::string m_writeBuffer;
    std::list<Session*>::iterator m_self;
    Millis m_deadline = 0;
    Millis m_requestStarted = 0;
    bool m_decided = false;
    bool m_trustedPeer = false;  // the peer is a trusted proxy (as of this request's decision)
    bool m_keepAlive = true;
    bool m_closeAfterWrite = false;
    bool m_writing = false;
    bool m_busy = false;
    bool m_stopping = false;
    bool m_forwardPending = false;
    bool m_forwarding = false;

    // Upstream exchange state.
    std::optional<tcp::socket> m_upstream;
    net::steady_timer m_upstreamTimer;
    std::string m_upstreamRequest;
    beast::flat_buffer m_upstreamBuffer;
    std::optional<http::response_parser<http::string_body>> m_upstreamParser;
    bool m_upstreamTimedOut = false;
};

// What the upstream may believe about the client and the original request.
// Every forwarding header from the client is dropped (a trusted proxy's
// chain is carried into the new ones): X-Forwarded-For, X-Forwarded-Proto,
// X-Forwarded-Host, X-Real-IP and Forwarded are written from the peer and
// the resolved client.
void Session::appendForwardingHeaders(std::string& r, std::string_view host, std::string_view forwardedHost, std::string_view proto)
{
    if (proto.empty())
        proto = "http";
    const std::string peer = m_peer.toString();
    // The chain as a trusted proxy told it (only then), then the peer.
    r += "X-Forwarded-For: ";
    if (!m_xff.empty()) {
        r += m_xff;
        r += ", ";
    }
    r += peer;
    r += "\r\nX-Forwarded-Proto: ";
    r += proto;
    r += "\r\n";
    if (forwardedHost.empty())
        forwardedHost = host;
    if (!forwardedHost.empty()) {
        r += "X-Forwarded-Host: ";
        r += forwardedHost;
        r += "\r\n";
    }
    r += "X-Real-IP: ";
    r += m_facts.client.toString();
    r += "\r\nForwarded: ";
    if (!m_forwarded.empty()) {
        r += m_forwarded;
        r += ", ";
    }
    // RFC 7239: an IPv6 node is bracketed and quoted.
    r += "for=";
    if (peer.find(':') != std::string::npos) {
        r += "\"[";
        r += peer;
        r += "]\"";
    } else {
        r += peer;
    }
    if (!host.empty()) {
        r += ";host=";
        appendForwardedValue(r, host);
    }
    r += ";proto=";
    appendForwardedValue(r, proto);
    r += "\r\n";
}

void Session::upstreamTimedOut()
{
    m_upstreamTimedOut = true;
    if (m_upstream) {
        error_code ec;
        m_upstream->close(ec);
    }
}

void Session::startForward()
{
    m_forwardPending = false;
    m_forwarding = true;
    m_deadline = 0;  // the upstream timer guards this phase
    // Re-serialise the request: method, target, the fields minus hop-by-hop
    // ones (and those the Connection header names), forwarding headers added,
    // the body framed by Content-Length whatever framing it arrived in.
    const RequestData& d = m_data;
    const UpstreamUrl& up = *opts().upstream;
    const std::string_view connection = d.header("Connection");
    std::string& r = m_upstreamRequest;
    r.clear();
    r += d.view(d.method);
    r += ' ';
    r += up.basePath;
    r += m_target.target;
    r += " HTTP/1.1\r\n";
    std::string_view host;
    std::string_view proto;
    std::string_view forwardedHost;
    for (const auto& [n, v] : d.fields) {
        const std::string_view name = d.view(n);
        if (isHopByHop(name) || Core::equalsIgnoreCase(name, "content-length") || listContainsToken(connection, name))
            continue;
        if (Core::equalsIgnoreCase(name, "host")) {
            host = d.view(v);
            continue;
        }
        const Forwarding kind = forwardingHeader(name);
        if (kind == Forwarding::Written) {
            // Written below; what a trusted proxy said about the scheme and host is kept.
            if (m_trustedPeer && Core::equalsIgnoreCase(name, "x-forwarded-proto"))
                proto = trimView(d.view(v));
            if (m_trustedPeer && Core::equalsIgnoreCase(name, "x-forwarded-host"))
                forwardedHost = trimView(d.view(v));
            continue;
        }
        if (kind == Forwarding::TrustedOnly && !m_trustedPeer)
            continue;
        r += name;
        r += ": ";
        r += d.view(v);
        r += "\r\n";
    }
    // One Host: an absolute-form target's authority (RFC 9112 §3.2.2), else
    // the client's, else the upstream's own name.
    if (m_target.absoluteForm)
        host = m_target.authority;
    r += "Host: ";
    r += host.empty() ? std::string_view(up.hostHeader) : host;
    r += "\r\n";
    appendForwardingHeaders(r, host, forwardedHost, proto);
    if (!d.body.empty() || !Core::equalsIgnoreCase(d.view(d.method), "GET")) {
        r += "Content-Length: ";
        r += std::to_string(d.body.size());
        r += "\r\n";
    }
    r += "Connection: keep-alive\r\n\r\n";
    r += d.body;

    m_upstreamTimedOut = false;
    if (!m_thread.idleUpstream.empty()) {
        m_upstream.emplace(std::move(m_thread.idleUpstream.back()));
        m_thread.idleUpstream.pop_back();
        sendUpstream(true);
        return;
    }
    m_upstream.emplace(m_thread.ioc);
    m_upstreamTimer.expires_after(std::chrono::milliseconds(opts().upstreamConnectTimeoutMs));
    m_upstreamTimer.async_wait([self = shared_from_this()](error_code ec) {
        if (!ec)
            self->upstreamTimedOut();
    });
    net::async_connect(*m_upstream, m_thread.upstreamEndpoints,
                       [self = shared_from_this()](error_code ec, const tcp::endpoint&) {
                           self->m_upstreamTimer.cancel();
                           if (ec) {
                               self->upstreamFailed(self->m_upstreamTimedOut ? 504 : 502,
                                                    self->m_upstreamTimedOut ? "the upstream did not accept the connection in time"
                                                                             : "the upstream is not reachable");
                               return;
                           }
                           error_code ignored;
                           self->m_upstream->set_option(tcp::no_delay(true), ignored);
                           self->sendUpstream(false);
                       });
}

void Session::sendUpstream(bool reused)
{
    m_upstreamTimer.expires_after(std::chrono::milliseconds(opts().upstreamResponseTimeoutMs));
    m_upstreamTimer.async_wait([self = shared_from_this()](error_code ec) {
        if (!ec)
            self->upstreamTimedOut();
    });
    m_upstreamBuffer.clear();
    m_upstreamParser.emplace();
    m_upstreamParser->header_limit(64 * 1024);
    m_upstreamParser->body_limit(std::max<std::uint64_t>(opts().bodyLimitBytes, 64ull * 1024 * 1024));
    if (Core::equalsIgnoreCase(m_data.view(m_data.method), "HEAD"))
        m_upstreamParser->skip(true);
    net::async_write(*m_upstream, net::buffer(m_upstreamRequest), [self = shared_from_this(), reused](error_code ec, std::size_t) {
        if (ec) {
            self->onUpstreamResponse(ec, reused);
            return;
        }
        http::async_read(*self->m_upstream, self->m_upstreamBuffer, *self->m_upstreamParser,
                         [self, reused](error_code ec2, std::size_t) { self->onUpstreamResponse(ec2, reused); });
    });
}

void Session::onUpstreamResponse(error_code ec, bool reused)
{
    m_upstreamTimer.cancel();
    if (ec) {
        if (m_upstreamTimedOut) {
            upstreamFailed(504, "the upstream did not answer in time");
            return;
        }
        // A pooled keep-alive connection the upstream had already closed:
        // retry once on a fresh one when nothing came back and the method is
        // idempotent (nginx's proxy_next_upstream default).
        const std::string_view m = m_data.view(m_data.method);
        const bool idempotent = m == "GET" || m == "HEAD" || m == "OPTIONS" || m == "PUT" || m == "DELETE";
        if (reused && idempotent && !m_upstreamParser->got_some()) {
            error_code ignored;
            m_upstream->close(ignored);
            m_upstream.reset();
            m_forwardPending = true;
            m_forwarding = false;
            startForward();
            return;
        }
        upstreamFailed(502, "the upstream closed the connection or sent a malformed response");
        return;
    }
    relayUpstream();
}

void Session::upstreamFailed(int status, const char* why)
{
    if (m_upstream) {
        error_code ignored;
        m_upstream->close(ignored);
        m_upstream.reset();
    }
    if (m_listener.metrics) {
        m_listener.metrics->upstreamErrors.fetch_add(1, std::memory_order_relaxed);
        m_listener.metrics->countHttpError(m_thread.index, status);
    }
    appendErrorResponse(m_out, status, why, !m_keepAlive, m_data.version < 11);
    forwardDone();
}

void Session::relayUpstream()
{
    auto& res = m_upstreamParser->get();
    const int status = int(res.result_int());
    // docs/BACKGROUND.md, cooldown: a cooldown starts only when the action succeeded.
    if (status >= 200 && status < 300)
        m_listener.engine.reportSuccess(m_facts, wallMs());
    std::string& o = m_out;
    o += m_data.version < 11 ? "HTTP/1.0 " : "HTTP/1.1 ";
    o += std::to_string(status);
    o += ' ';
    o += std::string_view(res.reason().data(), res.reason().size());
    o += "\r\n";
    const auto connection = res[http::field::connection];
    for (const auto& field : res) {
        const std::string_view name(field.name_string().data(), field.name_string().size());
        if (isHopByHop(name) || Core::equalsIgnoreCase(name, "content-length")
            || listContainsToken(std::string_view(connection.data(), connection.size()), name))
            continue;
        o += name;
        o += ": ";
        o += std::string_view(field.value().data(), field.value().size());
        o += "\r\n";
    }
    if (m_decision.rateLimitHeadersOnAllowed)
        appendRateLimitHeaders(o, m_decision);
    const bool head = Core::equalsIgnoreCase(m_data.view(m_data.method), "HEAD");
    const bool noBody = status / 100 == 1 || status == 204 || status == 304;
    if (head || status == 304) {
        // No body follows, but the length is the one a GET would have (RFC 9110 §9.3.2, §15.4.5).
        if (const auto length = res[http::field::content_length]; !length.empty() && status != 204 && status / 100 != 1) {
            o += "Content-Length: ";
            o += std::string_view(length.data(), length.size());
            o += "\r\n";
        }
    } else if (!noBody) {
        o += "Content-Length: ";
        o += std::to_string(res.body().size());
        o += "\r\n";
    }
    if (!m_keepAlive)
        o += "Connection: close\r\n";
    else if (m_data.version < 11)
        o += "Connection: keep-alive\r\n";
    o += "\r\n";
    if (!head)
        o += res.body();
    // Keep the upstream connection for the next request when it allows.
    if (res.keep_alive() && m_thread.idleUpstream.size() < opts().upstreamPoolPerThread && m_upstreamBuffer.size() == 0)
        m_thread.idleUpstream.push_back(std::move(*m_upstream));
    else {
        error_code ignored;
        m_upstream->close(ignored);
    }
    m_upstream.reset();
    forwardDone();
}

void Session::forwardDone()
{
    m_forwarding = false;
    m_busy = false;
    if (!m_keepAlive)
        m_closeAfterWrite = true;
    if (!m_socket.is_open())
        return;
    if (!m_closeAfterWrite)
        newRequest();
    flush();
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
        if (ec)
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
