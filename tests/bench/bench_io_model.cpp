// SPDX-License-Identifier: GPL-3.0-or-later
// The listener's threading model, measured rather than assumed: the same
// minimal Beast HTTP server (answer "ok" to every request, keep-alive) run
// either as N threads sharing one io_context (a strand per connection, one
// acceptor) or as N io_contexts with one thread each (an SO_REUSEPORT acceptor
// per thread, connections never change thread). scripts/bench-http drives both
// with wrk in the same run and reports the ratio; the listener uses the faster.
//
//   bench_io_model shared|per-thread PORT THREADS
#include <utility>  // before Asio: Boost 1.74 + GCC 12 in C++20 need std::exchange declared first

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

class Session : public std::enable_shared_from_this<Session> {
public:
    explicit Session(tcp::socket socket) : m_stream(std::move(socket)) {}

    void start() { read(); }

private:
    void read()
    {
        m_request = {};
        http::async_read(m_stream, m_buffer, m_request, [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (!ec)
                self->respond();
        });
    }

    void respond()
    {
        m_response = {};
        m_response.result(http::status::ok);
        m_response.version(m_request.version());
        m_response.keep_alive(m_request.keep_alive());
        m_response.set(http::field::content_type, "text/plain");
        m_response.body() = "ok";
        m_response.prepare_payload();
        http::async_write(m_stream, m_response, [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (!ec && self->m_response.keep_alive())
                self->read();
        });
    }

    beast::tcp_stream m_stream;
    beast::flat_buffer m_buffer;
    http::request<http::empty_body> m_request;
    http::response<http::string_body> m_response;
};

void acceptLoop(tcp::acceptor& acceptor, bool strandPerConnection)
{
    auto executor = acceptor.get_executor();
    auto next = [&acceptor, strandPerConnection]() {
        acceptLoop(acceptor, strandPerConnection);
    };
    if (strandPerConnection) {
        acceptor.async_accept(net::make_strand(executor), [next](beast::error_code ec, tcp::socket socket) {
            if (!ec)
                std::make_shared<Session>(std::move(socket))->start();
            next();
        });
    } else {
        acceptor.async_accept([next](beast::error_code ec, tcp::socket socket) {
            if (!ec)
                std::make_shared<Session>(std::move(socket))->start();
            next();
        });
    }
}

void openAcceptor(tcp::acceptor& acceptor, const tcp::endpoint& endpoint, bool reusePort)
{
    acceptor.open(endpoint.protocol());
    acceptor.set_option(net::socket_base::reuse_address(true));
    if (reusePort) {
        int one = 1;
        ::setsockopt(acceptor.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    }
    acceptor.bind(endpoint);
    acceptor.listen(net::socket_base::max_listen_connections);
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 4 || (std::strcmp(argv[1], "shared") != 0 && std::strcmp(argv[1], "per-thread") != 0)) {
        std::fprintf(stderr, "usage: bench_io_model shared|per-thread PORT THREADS\n");
        return 2;
    }
    const bool shared = std::strcmp(argv[1], "shared") == 0;
    const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(std::stoi(argv[2])));
    const int threads = std::max(1, std::stoi(argv[3]));

    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    std::vector<std::unique_ptr<net::io_context>> contexts;
    std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
    std::vector<std::thread> pool;
    if (shared) {
        contexts.push_back(std::make_unique<net::io_context>(threads));
        acceptors.push_back(std::make_unique<tcp::acceptor>(*contexts[0]));
        openAcceptor(*acceptors[0], endpoint, false);
        acceptLoop(*acceptors[0], true);
        for (int i = 0; i < threads; ++i)
            pool.emplace_back([&] { contexts[0]->run(); });
    } else {
        for (int i = 0; i < threads; ++i) {
            contexts.push_back(std::make_unique<net::io_context>(1));
            acceptors.push_back(std::make_unique<tcp::acceptor>(*contexts.back()));
            openAcceptor(*acceptors.back(), endpoint, true);
            acceptLoop(*acceptors.back(), false);
        }
        for (int i = 0; i < threads; ++i)
            pool.emplace_back([&, i] { contexts[std::size_t(i)]->run(); });
    }
    std::printf("%s model, %d threads, on 127.0.0.1:%d\n", argv[1], threads, int(endpoint.port()));
    std::fflush(stdout);
    int sig = 0;
    sigwait(&signals, &sig);
    for (auto& c : contexts)
        c->stop();
    for (auto& t : pool)
        t.join();
    return 0;
}
