// SPDX-License-Identifier: GPL-3.0-or-later
#include "cluster/RedisConnection.h"

#include "core/Printable.h"
#include "core/Utf8.h"

#include <hiredis/hiredis.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <ctime>
#include <pthread.h>
#include <sys/time.h>

namespace Floodgate::Cluster {

namespace {

using SteadyClock = std::chrono::steady_clock;

// Error text from a server goes into one log line: at most this many bytes.
constexpr std::size_t MAX_ERROR_TEXT = 300;

std::int64_t microsSince(SteadyClock::time_point start)
{
    return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start).count();
}

timeval toTimeval(std::chrono::milliseconds ms)
{
    timeval tv{};
    tv.tv_sec = time_t(ms.count() / 1000);
    tv.tv_usec = suseconds_t((ms.count() % 1000) * 1000);
    return tv;
}

// hiredis writes with write(2): to a server that has gone away that raises
// SIGPIPE, whose default action ends the whole process. The signal is held
// back in this thread while hiredis works, and one it raised is taken off
// the queue before the old mask comes back; the caller sees the EPIPE as a
// failed call instead. (Linux has no SO_NOSIGPIPE, and hiredis 0.14 does
// not pass MSG_NOSIGNAL.)
class SigpipeGuard {
public:
    SigpipeGuard()
    {
        sigemptyset(&m_pipe);
        sigaddset(&m_pipe, SIGPIPE);
        sigset_t pending;
        sigpending(&pending);
        m_wasPending = sigismember(&pending, SIGPIPE) == 1;
        m_blocked = pthread_sigmask(SIG_BLOCK, &m_pipe, &m_old) == 0;
    }
    ~SigpipeGuard()
    {
        if (!m_blocked)
            return;
        const int savedErrno = errno;
        sigset_t pending;
        sigpending(&pending);
        if (!m_wasPending && sigismember(&pending, SIGPIPE) == 1) {
            const timespec zero{0, 0};
            while (sigtimedwait(&m_pipe, nullptr, &zero) == -1 && errno == EINTR) {
            }
        }
        pthread_sigmask(SIG_SETMASK, &m_old, nullptr);
        errno = savedErrno;
    }
    SigpipeGuard(const SigpipeGuard&) = delete;
    SigpipeGuard& operator=(const SigpipeGuard&) = delete;

private:
    sigset_t m_pipe;
    sigset_t m_old;
    bool m_wasPending = false;
    bool m_blocked = false;
};

// A read or write that gave up after the socket timeout (SO_RCVTIMEO and
// SO_SNDTIMEO report EAGAIN), or a connect that ran out of time.
bool isTimeoutErrno(int e)
{
    return e == EAGAIN || e == EWOULDBLOCK || e == ETIMEDOUT;
}

bool isTimeout(const redisContext& c, int savedErrno)
{
#ifdef REDIS_ERR_TIMEOUT  // hiredis 1.x names it
    if (c.err == REDIS_ERR_TIMEOUT)
        return true;
#endif
    return c.err == REDIS_ERR_IO && isTimeoutErrno(savedErrno);
}

Reply copyReply(const redisReply& r)
{
    Reply out;
    switch (r.type) {
    case REDIS_REPLY_INTEGER:
        out.kind = Reply::Kind::Integer;
        out.integer = r.integer;
        break;
    case REDIS_REPLY_NIL:
        out.kind = Reply::Kind::Nil;
        break;
    case REDIS_REPLY_ARRAY:
        out.kind = Reply::Kind::Array;
        out.elements.reserve(r.elements);
        for (std::size_t i = 0; i < r.elements; ++i)
            out.elements.push_back(copyReply(*r.element[i]));
        break;
    case REDIS_REPLY_STATUS:
        out.kind = Reply::Kind::Status;
        out.text.assign(r.str, r.len);
        break;
    case REDIS_REPLY_ERROR:
        out.kind = Reply::Kind::Error;
        out.text.assign(r.str, r.len);
        break;
    default:  // REDIS_REPLY_STRING; RESP3 types never come: the connection never sends HELLO 3
        out.kind = Reply::Kind::String;
        if (r.str)
            out.text.assign(r.str, r.len);
        break;
    }
    return out;
}

Reply errorReply(std::string text)
{
    Reply r;
    r.kind = Reply::Kind::Error;
    r.text = std::move(text);
    return r;
}

// Server text made fit for one log line: the password (should a server or
// an impostor ever echo it) replaced, bounded (never inside a character),
// what a terminal obeys as visible escapes (Core::printable).
std::string oneLine(std::string text, const std::string& password)
{
    if (!password.empty())
        for (auto p = text.find(password); p != std::string::npos; p = text.find(password, p + 3))
            text.replace(p, password.size(), "***");
    const bool cut = text.size() > MAX_ERROR_TEXT;
    if (cut)
        text.resize(Core::utf8Cut(text, MAX_ERROR_TEXT));
    text = Core::printable(text);
    if (cut)
        text += "...";
    return text;
}

bool contains(std::string_view text, std::string_view part)
{
    return text.find(part) != std::string_view::npos;
}

} // namespace

bool Reply::isError(std::string_view code) const
{
    return kind == Kind::Error && std::string_view(text).starts_with(code) && (text.size() == code.size() || text[code.size()] == ' ');
}

Command Command::eval(Script& script, std::vector<std::string> keys, std::vector<std::string> arguments)
{
    Command c;
    c.script = &script;
    c.keyCount = keys.size();
    c.args = std::move(keys);
    c.args.insert(c.args.end(), std::make_move_iterator(arguments.begin()), std::make_move_iterator(arguments.end()));
    return c;
}

struct RedisConnection::Impl {
    redisContext* context = nullptr;
    std::string where;  // "redis at 127.0.0.1:6379", the start of every message

    ~Impl() { close(); }
    void close()
    {
        if (context) {
            redisFree(context);
            context = nullptr;
        }
    }

    Outcome notConnected() const { return {Failure::Unreachable, where + ": not connected"}; }

    // After a failed hiredis call; `handshake`: the peer has not yet shown
    // it speaks Redis, so garbage or a hang-up means it is something else.
    Outcome ioFailure(int savedErrno, bool handshake, std::chrono::milliseconds ioTimeout) const
    {
        const redisContext& c = *context;
        const std::string detail = c.errstr;
        if (isTimeout(c, savedErrno))
            return {Failure::Timeout, where + ": no reply within " + std::to_string(ioTimeout.count()) + " ms (is the server stopped or overloaded?)"};
        const bool hungUp = c.err == REDIS_ERR_EOF || (c.err == REDIS_ERR_IO && (savedErrno == ECONNRESET || savedErrno == EPIPE));
        if (handshake && c.err == REDIS_ERR_PROTOCOL)
            return {Failure::NotRedis, where + ": this is not a Redis server (" + detail + "); check the host and port in --redis"};
        if (handshake && hungUp)
            return {Failure::NotRedis, where + ": the peer hung up without answering; is it a Redis server? (check the host and port in --redis)"};
        if (c.err == REDIS_ERR_EOF)
            return {Failure::Unreachable, where + ": the server closed the connection (restarted, killed, or one of its limits such as timeout or maxclients)"};
        if (c.err == REDIS_ERR_PROTOCOL || c.err == REDIS_ERR_OOM)
            return {Failure::Protocol, where + ": " + detail + "; the connection was closed"};
        return {Failure::Unreachable, where + ": the connection broke (" + detail + ")"};
    }

    Outcome notRedis(const char* command) const
    {
        return {Failure::NotRedis,
                where + ": the peer answered " + command + " with something a Redis server does not send; check the host and port in --redis"};
    }
};

RedisConnection::RedisConnection(RedisUrl url, std::chrono::milliseconds connectTimeout, std::chrono::milliseconds ioTimeout)
    : m_url(std::move(url)), m_connectTimeout(connectTimeout), m_ioTimeout(ioTimeout), m_impl(std::make_unique<Impl>())
{
    m_impl->where = "redis at " + m_url.address();
}

RedisConnection::~RedisConnection() = default;

bool RedisConnection::isConnected() const
{
    return m_impl->context != nullptr;
}

void RedisConnection::close()
{
    m_impl->close();
}

Outcome RedisConnection::connect()
{
    close();
    const auto start = SteadyClock::now();
    SigpipeGuard guard;
    const timeval connectTimeout = toTimeval(m_connectTimeout);
    errno = 0;
    redisContext* c = m_url.isUnix() ? redisConnectUnixWithTimeout(m_url.unixPath.c_str(), connectTimeout)
                                     : redisConnectWithTimeout(m_url.host.c_str(), m_url.port, connectTimeout);
    const int savedErrno = errno;
    m_roundTripMicros = microsSince(start);
    if (!c)
        return {Failure::Protocol, m_impl->where + ": out of memory for a connection"};
    m_impl->context = c;
    if (c->err) {
        // A connect that used up its whole time timed out, whatever errno
        // was left behind.
        const bool timedOut = isTimeout(*c, savedErrno) || (m_connectTimeout.count() > 0 && m_roundTripMicros >= m_connectTimeout.count() * 1000);
        Outcome o = timedOut ? Outcome{Failure::Timeout, m_impl->where + ": no connection within " + std::to_string(m_connectTimeout.count()) +
                                                           " ms (is the host up, and the port not filtered by a firewall?)"}
                             : Outcome{Failure::Unreachable, m_impl->where + ": cannot connect (" + c->errstr + "); is redis-server running there? (check --redis)"};
        close();
        return o;
    }
    if (redisSetTimeout(c, toTimeval(m_ioTimeout)) != REDIS_OK) {
        Outcome o{Failure::Unreachable, m_impl->where + ": cannot set the I/O timeout (" + c->errstr + ")"};
        close();
        return o;
    }
    Outcome o = handshake();
    m_roundTripMicros = microsSince(start);
    if (!o.ok())
        close();
    return o;
}

Outcome RedisConnection::handshake()
{
    std::vector<Command> steps;
    if (!m_url.password.empty())
        steps.push_back(m_url.user.empty() ? Command{"AUTH", m_url.password} : Command{"AUTH", m_url.user, m_url.password});
    if (m_url.db != 0)
        steps.push_back({"SELECT", std::to_string(m_url.db)});
    steps.push_back({"PING"});
    std::vector<Reply> replies(steps.size());
    if (Outcome o = sendAndRead(steps, std::vector<bool>(steps.size(), true), replies, true); !o.ok())
        return o;
    std::size_t i = 0;
    if (!m_url.password.empty()) {
        const Reply& r = replies[i++];
        if (r.isError())
            return errorOutcome(r);
        if (r.kind != Reply::Kind::Status || r.text != "OK")
            return m_impl->notRedis("AUTH");
    }
    if (m_url.db != 0) {
        const Reply& r = replies[i++];
        if (r.isError("NOAUTH") || r.isError("WRONGPASS"))
            return errorOutcome(r);
        if (r.isError())
            return {Failure::Server, m_impl->where + ": SELECT " + std::to_string(m_url.db) + " failed: " + oneLine(r.text, m_url.password) +
                                         " (does the server have that many databases? check /DB in --redis)"};
        if (r.kind != Reply::Kind::Status || r.text != "OK")
            return m_impl->notRedis("SELECT");
    }
    const Reply& pong = replies[i];
    if (pong.isError())
        return errorOutcome(pong);
    if (pong.kind != Reply::Kind::Status || pong.text != "PONG")
        return m_impl->notRedis("PING");
    return {};
}

Outcome RedisConnection::sendAndRead(const std::vector<Command>& commands, const std::vector<bool>& send, std::vector<Reply>& replies,
                                     bool handshake)
{
    redisContext* c = m_impl->context;
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    std::string keyCount;
    const auto add = [&](const std::string& s) {
        argv.push_back(s.data());
        lengths.push_back(s.size());
    };
    static const std::string EVALSHA = "EVALSHA";
    for (std::size_t i = 0; i < commands.size(); ++i) {
        if (!send[i])
            continue;
        const Command& command = commands[i];
        argv.clear();
        lengths.clear();
        if (command.script) {
            keyCount = std::to_string(command.keyCount);
            add(EVALSHA);
            add(command.script->m_sha);
            add(keyCount);
        }
        for (const std::string& a : command.args)
            add(a);
        // hiredis copies the arguments into its output buffer here.
        if (redisAppendCommandArgv(c, int(argv.size()), argv.data(), lengths.data()) != REDIS_OK) {
            close();
            return {Failure::Protocol, m_impl->where + ": out of memory for a command"};
        }
    }
    for (std::size_t i = 0; i < commands.size(); ++i) {
        if (!send[i])
            continue;
        void* raw = nullptr;
        // The first call writes the whole pipeline, then each call reads one reply.
        const int rc = redisGetReply(c, &raw);
        const int savedErrno = errno;
        if (rc != REDIS_OK || !raw) {
            // A server that answered an error and hung up (protected mode
            // does, to the first command): the error says what happened.
            for (std::size_t k = 0; handshake && k < i; ++k)
                if (send[k] && replies[k].isError()) {
                    Outcome o = errorOutcome(replies[k]);
                    close();
                    return o;
                }
            Outcome o = m_impl->ioFailure(savedErrno, handshake, m_ioTimeout);
            close();
            return o;
        }
        replies[i] = copyReply(*static_cast<redisReply*>(raw));
        freeReplyObject(raw);
    }
    return {};
}

Outcome RedisConnection::loadScripts(const std::vector<Script*>& scripts, std::vector<Reply>& replies)
{
    std::vector<Command> loads;
    for (const Script* s : scripts)
        loads.push_back({"SCRIPT", "LOAD", s->m_source});
    replies.assign(loads.size(), Reply{});
    if (Outcome o = sendAndRead(loads, std::vector<bool>(loads.size(), true), replies); !o.ok())
        return o;
    for (std::size_t k = 0; k < scripts.size(); ++k) {
        if (replies[k].kind == Reply::Kind::String && replies[k].text.size() == 40) {
            scripts[k]->m_sha = replies[k].text;
        } else if (!replies[k].isError()) {
            close();
            return {Failure::Protocol, m_impl->where + ": SCRIPT LOAD answered something that is not a SHA-1; the connection was closed"};
        }
    }
    return {};
}

Outcome RedisConnection::pipeline(const std::vector<Command>& commands, std::vector<Reply>& replies)
{
    const auto start = SteadyClock::now();
    replies.assign(commands.size(), Reply{});
    Outcome o;
    {
        SigpipeGuard guard;
        o = runPipeline(commands, replies);
    }
    m_roundTripMicros = microsSince(start);
    if (!o.ok())
        replies.clear();
    return o;
}

Outcome RedisConnection::runPipeline(const std::vector<Command>& commands, std::vector<Reply>& replies)
{
    if (!isConnected())
        return m_impl->notConnected();
    const auto indexOf = [](const std::vector<Script*>& v, const Script* s) {
        std::size_t k = 0;
        while (k < v.size() && v[k] != s)
            ++k;
        return k;
    };
    std::vector<bool> send(commands.size(), true);
    std::vector<Script*> unloaded;
    for (std::size_t i = 0; i < commands.size(); ++i) {
        const Command& command = commands[i];
        if (!command.script && command.args.empty()) {
            // "*0\r\n" gets no reply at all: the read would wait for nothing.
            replies[i] = errorReply("ERR empty command (not sent)");
            send[i] = false;
        } else if (command.script && command.script->m_sha.empty() && indexOf(unloaded, command.script) == unloaded.size()) {
            unloaded.push_back(command.script);
        }
    }
    if (!unloaded.empty()) {
        std::vector<Reply> loaded;
        if (Outcome o = loadScripts(unloaded, loaded); !o.ok())
            return o;
        for (std::size_t i = 0; i < commands.size(); ++i) {
            if (commands[i].script && commands[i].script->m_sha.empty()) {
                replies[i] = loaded[indexOf(unloaded, commands[i].script)];
                send[i] = false;
            }
        }
    }
    if (Outcome o = sendAndRead(commands, send, replies); !o.ok())
        return o;
    // -NOSCRIPT: this Redis lost its script cache (a restart, SCRIPT FLUSH).
    std::vector<bool> again(commands.size(), false);
    std::vector<Script*> flushed;
    for (std::size_t i = 0; i < commands.size(); ++i) {
        if (send[i] && commands[i].script && replies[i].isError("NOSCRIPT")) {
            again[i] = true;
            if (indexOf(flushed, commands[i].script) == flushed.size())
                flushed.push_back(commands[i].script);
        }
    }
    if (flushed.empty())
        return {};
    std::vector<Reply> loaded;
    if (Outcome o = loadScripts(flushed, loaded); !o.ok())
        return o;
    for (std::size_t i = 0; i < commands.size(); ++i) {
        if (again[i] && loaded[indexOf(flushed, commands[i].script)].isError()) {
            replies[i] = loaded[indexOf(flushed, commands[i].script)];
            again[i] = false;
        }
    }
    return sendAndRead(commands, again, replies);
}

Outcome RedisConnection::run(const Command& command, Reply& reply)
{
    std::vector<Reply> replies;
    Outcome o = pipeline({command}, replies);
    if (o.ok())
        reply = std::move(replies.front());
    return o;
}

Outcome RedisConnection::time(ServerTime& out)
{
    Reply r;
    out.sentAt = SteadyClock::now();
    Outcome o = run({"TIME"}, r);
    out.repliedAt = SteadyClock::now();
    if (!o.ok())
        return o;
    if (r.isError())
        return errorOutcome(r);
    long long seconds = -1;
    long long micros = -1;
    const auto number = [](const Reply& e, long long& v) {
        if (e.kind != Reply::Kind::String)
            return false;
        const auto [end, ec] = std::from_chars(e.text.data(), e.text.data() + e.text.size(), v);
        return ec == std::errc() && end == e.text.data() + e.text.size();
    };
    if (r.kind != Reply::Kind::Array || r.elements.size() != 2 || !number(r.elements[0], seconds) || !number(r.elements[1], micros) || seconds < 0 ||
        micros < 0 || micros > 999999) {
        close();
        return {Failure::Protocol, m_impl->where + ": TIME answered something that is not two numbers; the connection was closed"};
    }
    out.serverMicros = seconds * 1000000 + micros;
    return {};
}

Outcome RedisConnection::errorOutcome(const Reply& error) const
{
    const std::string& where = m_impl->where;
    const std::string text = oneLine(error.text, m_url.password);
    // Protected mode (no password set, and this node is not on the server's
    // machine): its sentence also says "no password is set", but no password
    // given here would help until the server has one.
    if (error.isError("DENIED") || contains(text, "protected mode"))
        return {Failure::Auth, where + ": the server is in protected mode and refuses connections from other machines because it has no password: "
                                       "set one on it (requirepass, or an ACL user) and give it in --redis"};
    if (error.isError("NOAUTH"))
        return {Failure::Auth, where + ": the server requires a password (add it to --redis: redis://:PASSWORD@HOST:PORT)"};
    if (error.isError("WRONGPASS") || contains(text, "invalid password") || contains(text, "invalid username-password"))
        return {Failure::Auth, where + ": authentication failed (check the " + (m_url.user.empty() ? "password" : "user and password") + " in --redis)"};
    if (contains(text, "without any password configured") || contains(text, "no password is set"))
        return {Failure::Auth, where + ": a password was given but the server has none configured (remove it from --redis, or set requirepass on the server)"};
    // What to do about the errors a sync thread can meet, by their code.
    static constexpr std::pair<std::string_view, std::string_view> HINTS[] = {
        {"READONLY", " (this server is a read-only replica: point --redis at the primary)"},
        {"OOM", " (the server reached its maxmemory: raise maxmemory or give it more memory)"},
        {"LOADING", " (the server is loading its data set into memory; it answers once done)"},
        {"MISCONF", " (the server cannot save its RDB snapshot and refuses writes: fix its disk or dir, or set stop-writes-on-bgsave-error no)"},
        {"NOSCRIPT", " (the script cache was emptied again while the script was being loaded)"},
        {"BUSY", " (a script runs too long: SCRIPT KILL, or wait for it)"},
        {"NOPERM", " (the user in --redis lacks a permission: grant it with ACL SETUSER)"},
    };
    std::string hint;
    for (const auto& [code, advice] : HINTS)
        if (error.isError(code))
            hint = advice;
    return {Failure::Server, where + ": the server answered " + text + hint};
}

} // namespace Floodgate::Cluster
