// SPDX-License-Identifier: GPL-3.0-or-later
// Proxy mode streams: the built `floodgate --headless --upstream` relays a
// 200 MB response while its resident memory stays within a few megabytes of
// where it started, and a client that stops reading stops the upstream (the
// kernel's socket buffers fill, Floodgate reads no further) instead of
// making Floodgate hold the rest.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ChildProcess.h"
#include "HttpTestClient.h"
#include "ProcessMemory.h"
#include "TestUpstream.h"

#include <chrono>
#include <thread>
#endif

using namespace FloodgateTest;

namespace {

constexpr std::uint64_t Body = 200ull << 20;  // 200 MiB
// What streaming may cost above the resident size before the transfer: a
// proxied connection holds a few 64 KiB relay buffers; the rest is
// allocator slack. Buffering the body would cost the body (and the old code
// refused bodies over 64 MiB with a 502).
constexpr std::int64_t GrowthBoundKb = 16 * 1024;

struct ProxyChild {
    explicit ProxyChild(std::uint16_t upstreamPort)
    {
        started = child.start({QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"),
                               QStringLiteral("off"), QStringLiteral("--log"), QStringLiteral("off"), QStringLiteral("--threads"),
                               QStringLiteral("1"), QStringLiteral("--db"), dir.filePath(QStringLiteral("floodgate.db")),
                               QStringLiteral("--upstream"), QStringLiteral("http://127.0.0.1:%1").arg(upstreamPort)});
    }
    ~ProxyChild() { child.stop(); }
    pid_t pid() const { return pid_t(child.proc.processId()); }

    QTemporaryDir dir;
    Child child;
    bool started = false;
};

// Reads `bytes` of the generated body from `offset` on, checking every byte.
std::uint64_t readPattern(Connection& c, std::uint64_t offset, std::uint64_t bytes, bool& intact, int timeoutMs)
{
    std::uint64_t at = offset;
    return c.readBody(
        bytes,
        [&](std::string_view piece) {
            for (char ch : piece)
                if (ch != patternByte(at++))
                    intact = false;
        },
        timeoutMs);
}

// Decodes a chunked body fed in pieces of any size, checking the pattern.
struct ChunkedPattern {
    std::string pending;
    std::uint64_t left = 0;  // of the chunk being read
    bool inData = false;
    bool ended = false;
    bool intact = true;
    std::uint64_t decoded = 0;

    void feed(std::string_view piece)
    {
        pending += piece;
        std::size_t at = 0;
        while (at < pending.size() && !ended) {
            if (!inData) {
                const auto e = pending.find("\r\n", at);
                if (e == std::string::npos)
                    break;
                if (e == at) {  // the CRLF after a chunk's data
                    at += 2;
                    continue;
                }
                left = std::strtoull(pending.c_str() + at, nullptr, 16);
                at = e + 2;
                ended = left == 0;
                inData = !ended;
                continue;
            }
            const std::size_t n = std::size_t(std::min<std::uint64_t>(left, pending.size() - at));
            for (std::size_t i = 0; i < n; ++i)
                if (pending[at + i] != patternByte(decoded + i))
                    intact = false;
            decoded += n;
            left -= n;
            at += n;
            inData = left > 0;
        }
        pending.erase(0, at);
    }
};

} // namespace

class TestProxyMemory : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void a200MBDownloadStaysWithinTheBound()
    {
        TestUpstream up;
        ProxyChild p(up.port());
        QVERIFY2(p.started, qPrintable(QString::fromUtf8(p.child.proc.readAllStandardError())));
        QVERIFY(fetch(p.child.port, get("/warm-up")));  // the first exchange's one-off allocations
        up.setReply({200, "OK", "Content-Type: application/octet-stream\r\n", "", 0, Body});
        const std::int64_t before = memoryKb(p.pid(), "VmRSS");
        QVERIFY(before > 0);
        QVERIFY(resetPeak(p.pid()));

        Connection c(p.child.port);
        QVERIFY(c.send(get("/big.iso")));
        auto head = c.readHeader();
        QVERIFY(head);
        QCOMPARE(head->status, 200);
        QCOMPARE(head->header("content-length"), std::to_string(Body));
        bool intact = true;
        QCOMPARE(readPattern(c, 0, Body, intact, 120'000), Body);
        QVERIFY2(intact, "every byte arrived in order");

        const std::int64_t peak = memoryKb(p.pid(), "VmHWM");
        qInfo("floodgate: VmRSS %lld kB before, peak %lld kB during a %llu MiB download", (long long)before, (long long)peak,
              (unsigned long long)(Body >> 20));
        QVERIFY2(peak - before < GrowthBoundKb, qPrintable(QStringLiteral("grew by %1 kB").arg(peak - before)));
        // The connection is still good for the next request.
        up.setReply({});
        QVERIFY(c.send(get("/after")));
        auto next = c.read();
        QVERIFY(next);
        QCOMPARE(QString::fromStdString(next->body), QStringLiteral("hello from upstream"));
    }

    void aClientThatStopsReadingStopsTheUpstream()
    {
        TestUpstream up;
        ProxyChild p(up.port());
        QVERIFY(p.started);
        QVERIFY(fetch(p.child.port, get("/warm-up")));
        up.setReply({200, "OK", "", "", 0, Body, TestUpstream::Framing::Chunked});
        const std::int64_t before = memoryKb(p.pid(), "VmRSS");
        QVERIFY(resetPeak(p.pid()));

        Connection c(p.child.port);
        QVERIFY(c.send(get("/big.log")));
        auto head = c.readHeader();
        QVERIFY(head);
        QCOMPARE(head->header("transfer-encoding"), std::string("chunked"));
        // Read a little, then nothing for two seconds while the upstream has
        // 200 MiB to send.
        std::string firstBytes;
        QVERIFY(c.readBody(4096, [&](std::string_view s) { firstBytes += s; }) == 4096);
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        const std::uint64_t sentThen = up.bodyBytesSent();
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        const std::uint64_t sentNow = up.bodyBytesSent();
        const std::int64_t peak = memoryKb(p.pid(), "VmHWM");
        qInfo("paused reader: the upstream sent %llu MiB of %llu and stopped; floodgate VmRSS %lld kB before, peak %lld kB",
              (unsigned long long)(sentNow >> 20), (unsigned long long)(Body >> 20), (long long)before, (long long)peak);
        QVERIFY2(sentNow - sentThen < (1u << 20), "the upstream is held back while the client reads nothing");
        QVERIFY2(sentNow < Body / 4, "only what the sockets' buffers hold left the upstream");
        QVERIFY2(peak - before < GrowthBoundKb, qPrintable(QStringLiteral("grew by %1 kB").arg(peak - before)));

        // Reading again drains everything, in order (the pattern runs on
        // across chunks).
        ChunkedPattern body;
        body.feed(firstBytes);
        c.readBody(
            Body + (1 << 20),  // the body and its chunk framing
            [&](std::string_view piece) {
                body.feed(piece);
                return !body.ended;
            },
            60'000);
        QVERIFY2(body.ended, "the last chunk arrived");
        QCOMPARE(body.decoded, Body);
        QVERIFY2(body.intact, "every byte arrived in order");
    }
};

QTEST_APPLESS_MAIN(TestProxyMemory)
#include "test_proxy_memory.moc"
