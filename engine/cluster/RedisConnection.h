// SPDX-License-Identifier: GPL-3.0-or-later
// One blocking connection to Redis, for the cluster's sync thread (the only
// thread that uses it: there is no event loop to integrate with, so every
// call waits, bounded by the connect and I/O timeouts). hiredis does the
// wire work behind a pimpl; nothing of it shows here. The connection never
// prints or logs: every call returns an Outcome whose message is one line
// for the caller to log, naming the server and never the password.
#pragma once

#include "cluster/RedisUrl.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace Floodgate::Cluster {

enum class Failure {
    None,
    Unreachable,  // connect refused, no route, no such unix socket, the connection lost, or not connected at all
    Timeout,      // no connection within the connect timeout, or no reply within the I/O timeout (a stopped server)
    Auth,         // wrong user or password, a password missing, or one given to a server that has none
    NotRedis,     // the peer answered something that is not RESP (HTTP, SSH...) or hung up without answering
    Server,       // an error reply the call could not go on with (-LOADING, -READONLY, -OOM, -MISCONF, -NOSCRIPT...)
    Protocol,     // a reply that makes no sense on an established connection
};

// What a call came to. `message` is one line: "redis at 127.0.0.1:6390:
// authentication failed (check the password in --redis)".
struct Outcome {
    Failure kind = Failure::None;
    std::string message;
    bool ok() const { return kind == Failure::None; }
};

// A reply, copied out of hiredis (it owns its bytes).
struct Reply {
    enum class Kind { Nil, Integer, String, Status, Error, Array };
    Kind kind = Kind::Nil;
    long long integer = 0;       // Integer
    std::string text;            // String (binary safe), Status ("OK", "PONG"), Error ("ERR ...", "NOSCRIPT ...")
    std::vector<Reply> elements; // Array

    bool isError() const { return kind == Kind::Error; }
    // An error reply whose code (the first word) is `code`: isError("NOSCRIPT").
    bool isError(std::string_view code) const;
};

// A Lua script run with EVALSHA. Its SHA-1 comes from the first SCRIPT LOAD
// (on any connection: the hash depends on the text only) and is kept here;
// an empty Redis (restarted, SCRIPT FLUSH) gets the script again on demand.
// Like the connection, a Script belongs to the sync thread.
class Script {
public:
    explicit Script(std::string source) : m_source(std::move(source)) {}
    const std::string& source() const { return m_source; }
    const std::string& sha() const { return m_sha; }  // 40 hex digits; empty until loaded once

private:
    friend class RedisConnection;
    std::string m_source;
    std::string m_sha;
};

// One entry of a pipeline: a command and its arguments as byte strings
// (binary safe: "\0" and "\r\n" go through as they are), or a script run.
struct Command {
    std::vector<std::string> args;  // a script run: its keys, then its arguments
    Script* script = nullptr;       // set: EVALSHA sha keyCount args...
    std::size_t keyCount = 0;

    Command() = default;
    Command(std::initializer_list<std::string> arguments) : args(arguments) {}
    explicit Command(std::vector<std::string> arguments) : args(std::move(arguments)) {}
    // "Run `script` with KEYS = keys and ARGV = arguments". `script` must
    // outlive the pipeline() calls that carry the command.
    static Command eval(Script& script, std::vector<std::string> keys, std::vector<std::string> arguments);
};

// The server's clock read with TIME, and when the local steady clock sent
// the request and had the reply: the offset estimate is
// serverMicros - (sentAt + (repliedAt - sentAt) / 2).
struct ServerTime {
    std::int64_t serverMicros = 0;  // the server's wall clock, microseconds since the epoch
    std::chrono::steady_clock::time_point sentAt;
    std::chrono::steady_clock::time_point repliedAt;
};

class RedisConnection {
public:
    // Nothing happens until connect(). `connectTimeout` bounds the TCP or
    // unix connect; `ioTimeout` bounds every wait for the socket after that
    // (each write and each read, not a whole call: a server that keeps
    // sending slowly is not cut off). 0 means no limit. Resolving a host
    // name (getaddrinfo) is bounded by neither: give an address where the
    // resolver may be slow.
    RedisConnection(RedisUrl url, std::chrono::milliseconds connectTimeout, std::chrono::milliseconds ioTimeout);
    ~RedisConnection();
    RedisConnection(const RedisConnection&) = delete;
    RedisConnection& operator=(const RedisConnection&) = delete;

    // Connects (closing any earlier connection), then in one round trip
    // sends AUTH (with the user when the URL names one), SELECT when db is
    // not 0, and PING, and checks every answer: only a peer that answers
    // PONG counts as Redis.
    Outcome connect();
    void close();
    bool isConnected() const;
    const RedisUrl& url() const { return m_url; }

    // Sends every command, then reads every reply, in order: replies[i]
    // answers commands[i]. An error reply is a Reply of kind Error and
    // leaves the connection and the other replies alone. An I/O error or a
    // timeout closes the connection (connect() again) and empties `replies`.
    // Script runs go as EVALSHA; a script this process never loaded is
    // loaded first (SCRIPT LOAD, one more round trip), and the runs that
    // come back -NOSCRIPT (an empty Redis) are loaded and sent again once,
    // after the rest of the pipeline: a plain command that follows them has
    // then already run. A script that fails to load (a syntax error) gets
    // that error as its reply.
    Outcome pipeline(const std::vector<Command>& commands, std::vector<Reply>& replies);

    // One command: pipeline() of one.
    Outcome run(const Command& command, Reply& reply);

    // TIME. A reply that is not two numbers is a Protocol failure (closed).
    Outcome time(ServerTime& out);

    // How long the last connect(), pipeline(), run() or time() took, from
    // its first byte sent to its last reply read (script loads included),
    // in microseconds; a failed call counts up to its failure.
    std::int64_t roundTripMicros() const { return m_roundTripMicros; }

    // The Outcome an error reply stands for, for a caller that cannot go on
    // with it: Server (or Auth for -NOAUTH, -WRONGPASS), naming this server
    // and what to do about -READONLY, -OOM, -LOADING, -MISCONF, -NOSCRIPT,
    // -BUSY, -NOPERM. The error text is kept to one line without the password.
    Outcome errorOutcome(const Reply& error) const;

private:
    struct Impl;
    Outcome sendAndRead(const std::vector<Command>& commands, const std::vector<bool>& send, std::vector<Reply>& replies, bool handshake = false);
    Outcome loadScripts(const std::vector<Script*>& scripts, std::vector<Reply>& replies);
    Outcome runPipeline(const std::vector<Command>& commands, std::vector<Reply>& replies);
    Outcome handshake();

    RedisUrl m_url;
    std::chrono::milliseconds m_connectTimeout;
    std::chrono::milliseconds m_ioTimeout;
    std::int64_t m_roundTripMicros = 0;
    std::unique_ptr<Impl> m_impl;
};

} // namespace Floodgate::Cluster
