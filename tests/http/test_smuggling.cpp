// SPDX-License-Identifier: GPL-3.0-or-later
// Request smuggling against proxy mode, over real sockets: a raw client sends
// each hostile request, Floodgate's listener forwards what it allows to a test
// upstream that keeps the exact bytes it received, and those bytes are read
// with a strict RFC 9112 framer (TestUpstream.h's frameRequests). For every
// case: one request from the client is never two at the upstream; an
// ambiguous request is refused (4xx, or 501 for a transfer coding the
// listener does not implement) and its connection closed, with nothing
// forwarded; and the listener serves the next, normal client.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "HttpTestClient.h"
#include "ListenerStack.h"
#include "TestUpstream.h"

#include <thread>
#endif

using namespace Floodgate;
using namespace FloodgateTest;

namespace {

// Nothing is throttled: every refusal in this suite comes from the parser.
Core::EngineConfig unthrottled()
{
    Core::EngineConfig c = Core::defaultConfig();
    c.rules.clear();
    c.cooldowns.clear();
    return c;
}

const char NulField[] = "X-Pad: a\0b\r\nContent-Length: 5\r\n";
const QByteArray Smuggled = "GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n";

QByteArray post(const QByteArray& headers, const QByteArray& body)
{
    return "POST /form HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n" + body;
}

// Bytes as C-escaped text for failure messages.
QString printable(const std::string& bytes)
{
    QString out;
    for (unsigned char c : bytes) {
        if (c == '\r')
            out += QStringLiteral("\\r");
        else if (c == '\n')
            out += QStringLiteral("\\n");
        else if (c < 0x20 || c >= 0x7f)
            out += QStringLiteral("\\x%1").arg(int(c), 2, 16, QLatin1Char('0'));
        else
            out += QLatin1Char(char(c));
    }
    return out;
}

// Every byte the upstream received, over all its connections, read strictly.
StrictFraming upstreamFraming(TestUpstream& up, std::string* all)
{
    StrictFraming total;
    for (const std::string& stream : up.streams()) {
        *all += stream;
        const StrictFraming f = frameRequests(stream);
        total.requests += f.requests;
        if (total.problem.empty())
            total.problem = f.problem;
    }
    return total;
}

} // namespace

class TestSmuggling : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void oneAmbiguousRequestIsNeverTwo_data()
    {
        QTest::addColumn<QByteArray>("request");
        QTest::addColumn<QList<int>>("accepted");  // statuses that keep the property
        QTest::addColumn<QByteArray>("body");      // what the upstream must get when it is forwarded
        QTest::addColumn<QByteArrayList>("absent");  // never in the upstream's bytes
        QTest::addColumn<QString>("defect");         // non-empty: a known defect, expected to fail

        const QList<int> refused{400};
        const QList<int> refusedOrUnimplemented{400, 501};
        const QByteArrayList noSmuggle{"smuggled"};
        const QByteArray chunkedHello = "5\r\nhello\r\n0\r\n\r\n";

        // Content-Length and Transfer-Encoding together, in both orders.
        QTest::newRow("CL.TE") << post("Content-Length: 6\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n" + Smuggled) << refused
                               << QByteArray() << noSmuggle << QString();
        QTest::newRow("TE.CL") << post("Transfer-Encoding: chunked\r\nContent-Length: 4\r\n", "2b\r\n" + Smuggled + "\r\n0\r\n\r\n")
                               << refused << QByteArray() << noSmuggle << QString();
        // Obfuscated Transfer-Encoding beside a Content-Length that covers the
        // whole payload: read by Content-Length it is one request, read as
        // chunked it ends after "0" and GET /smuggled is a second one.
        const QByteArray clte = "0\r\n\r\n" + Smuggled;
        const QByteArray clteLength = "Content-Length: " + QByteArray::number(clte.size()) + "\r\n";
        const QList<QPair<QByteArray, QByteArray>> obfuscated{
            {"xchunked", "Transfer-Encoding: xchunked\r\n"},
            {"leading space", "Transfer-Encoding:  chunked\r\n"},
            {"chunked, identity", "Transfer-Encoding: chunked, identity\r\n"},
            {"tab", "Transfer-Encoding:\tchunked\r\n"},
            {"space before colon", "Transfer-Encoding : chunked\r\n"},
            {"mixed case", "tRaNsFeR-eNcOdInG: cHuNkEd\r\n"},
            {"vertical tab", "Transfer-Encoding:\x0b" "chunked\r\n"},
        };
        for (const auto& [name, field] : obfuscated)
            QTest::newRow(("TE " + name + " + CL").constData())
                << post(field + clteLength, clte) << refused << QByteArray() << noSmuggle << QString();
        // A folded line (obs-fold): RFC 9112 lets a server refuse it or
        // replace the fold with a space before forwarding; either way the
        // upstream never sees the continuation line.
        QTest::newRow("TE obs-fold + CL") << post("X-Pad: a\r\n Transfer-Encoding: chunked\r\n" + clteLength, clte) << QList<int>{200, 400}
                                          << clte << QByteArrayList{"\r\n Transfer-Encoding"} << QString();
        QTest::newRow("Transfer_Encoding + CL")
            << post("Transfer_Encoding: chunked\r\n" + clteLength, clte) << QList<int>{200, 400} << clte
            // Header names with '_' are dropped, as nginx does: an upstream that folds
            // '_' into '-' (CGI/WSGI environ) would read Transfer_Encoding as
            // Transfer-Encoding beside the Content-Length.
            << QByteArrayList{"Transfer_Encoding"} << QString();
        // The same forms alone: the well-formed ones are plain chunked bodies
        // (forwarded once, re-framed by Content-Length), the others are refused.
        QTest::newRow("TE leading space") << post("Transfer-Encoding:  chunked\r\n", chunkedHello) << QList<int>{200}
                                          << QByteArray("hello") << noSmuggle << QString();
        QTest::newRow("TE tab") << post("Transfer-Encoding:\tchunked\r\n", chunkedHello) << QList<int>{200} << QByteArray("hello")
                                << noSmuggle << QString();
        QTest::newRow("TE mixed case") << post("tRaNsFeR-eNcOdInG: cHuNkEd\r\n", chunkedHello) << QList<int>{200}
                                       << QByteArray("hello") << noSmuggle << QString();
        QTest::newRow("TE xchunked") << post("Transfer-Encoding: xchunked\r\n", chunkedHello + Smuggled) << refusedOrUnimplemented
                                     << QByteArray() << noSmuggle << QString();
        QTest::newRow("TE chunked, identity") << post("Transfer-Encoding: chunked, identity\r\n", chunkedHello + Smuggled)
                                              << refusedOrUnimplemented << QByteArray() << noSmuggle << QString();
        QTest::newRow("TE space before colon") << post("Transfer-Encoding : chunked\r\n", chunkedHello + Smuggled) << refused
                                               << QByteArray() << noSmuggle << QString();
        QTest::newRow("TE twice") << post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", chunkedHello + Smuggled)
                                  << refusedOrUnimplemented << QByteArray() << noSmuggle << QString();
        QTest::newRow("TE chunked then identity") << post("Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n", chunkedHello + Smuggled)
                                                  << refusedOrUnimplemented << QByteArray() << noSmuggle << QString();
        // Chunked framing itself.
        QTest::newRow("chunk size overflow") << post("Transfer-Encoding: chunked\r\n", "ffffffffffffffff1\r\nhello\r\n0\r\n\r\n" + Smuggled)
                                             << QList<int>{400, 413} << QByteArray() << noSmuggle << QString();
        QTest::newRow("chunk size 2^64-1") << post("Transfer-Encoding: chunked\r\n", "ffffffffffffffff\r\nhello\r\n0\r\n\r\n" + Smuggled)
                                           << QList<int>{400, 413} << QByteArray() << noSmuggle << QString();
        QTest::newRow("chunk extensions") << post("Transfer-Encoding: chunked\r\n", "5;name=value;q=\"a;b\"\r\nhello\r\n0;end\r\n\r\n")
                                          << QList<int>{200} << QByteArray("hello") << QByteArrayList{"name=value"} << QString();
        // Trailer fields arrive after the decision: merged into the forwarded
        // header (RFC 9110 6.5.1 forbids it) they would add headers the engine
        // never saw, such as a second Host or the user a cooldown is keyed on.
        // They are dropped.
        const QString trailerDefect;
        QTest::newRow("chunk trailer") << post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n")
                                       << QList<int>{200, 400} << QByteArray("hello") << QByteArrayList{"X-Trailer"} << trailerDefect;
        QTest::newRow("chunk trailer Host") << post("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\nHost: evil.example\r\n\r\n")
                                            << QList<int>{200, 400} << QByteArray("hello") << QByteArrayList{"evil.example"} << trailerDefect;
        QTest::newRow("chunk data longer than its size") << post("Transfer-Encoding: chunked\r\n", "3\r\nhello\r\n0\r\n\r\n" + Smuggled)
                                                         << refused << QByteArray() << noSmuggle << QString();
        // Line ends.
        QTest::newRow("bare LF line ends") << QByteArray("GET /lf HTTP/1.1\nHost: h\n\n") << QList<int>{200, 400} << QByteArray()
                                           << noSmuggle << QString();
        QTest::newRow("bare LF hides a Transfer-Encoding")
            << post("X-Pad: a\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n" + Smuggled) << refused << QByteArray()
            << noSmuggle << QString();
        QTest::newRow("bare CR in a field") << post("X-Pad: a\rTransfer-Encoding: chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n" + Smuggled)
                                            << refused << QByteArray() << noSmuggle << QString();
        QTest::newRow("bare LF after a chunk size") << post("Transfer-Encoding: chunked\r\n", "5\nhello\r\n0\r\n\r\n" + Smuggled)
                                                    << QList<int>{400} << QByteArray() << noSmuggle << QString();
        // Field values and Content-Length forms.
        QTest::newRow("NUL in a field") << post(QByteArray(NulField, sizeof NulField - 1), "hello") << refused << QByteArray()
                                        << QByteArrayList{QByteArray("\0", 1)} << QString();
        QTest::newRow("Content-Length +5") << post("Content-Length: +5\r\n", "hello" + Smuggled) << refused << QByteArray() << noSmuggle
                                           << QString();
        QTest::newRow("Content-Length 5, 5") << post("Content-Length: 5, 5\r\n", "hello") << QList<int>{200, 400} << QByteArray("hello")
                                             << QByteArrayList{"5, 5"} << QString();
        QTest::newRow("Content-Length 5 then 6") << post("Content-Length: 5\r\nContent-Length: 6\r\n", "hello" + Smuggled) << refused
                                                 << QByteArray() << noSmuggle << QString();
        QTest::newRow("Content-Length hex") << post("Content-Length: 0x5\r\n", "hello" + Smuggled) << refused << QByteArray() << noSmuggle
                                            << QString();
        QTest::newRow("Content-Length space before colon") << post("Content-Length : 5\r\n", "hello" + Smuggled) << refused << QByteArray()
                                                           << noSmuggle << QString();
        // Request lines.
        QTest::newRow("absolute-form target")
            << QByteArray("GET http://evil.example/x HTTP/1.1\r\nHost: h\r\n\r\n") << QList<int>{200, 400} << QByteArray()
            // Forwarded in origin form (the authority becomes the Host, RFC 9112
            // section 3.2.2), never as base path + the whole URL.
            << QByteArrayList{"http://", "/apphttp"} << QString();
        QTest::newRow("HTTP/0.9 request line") << QByteArray("GET /smuggled\r\n\r\n") << refused << QByteArray() << noSmuggle << QString();
        QTest::newRow("HTTP/2 preface") << QByteArray("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") << QList<int>{400, 505} << QByteArray()
                                        << QByteArrayList{"PRI"} << QString();
        QTest::newRow("HTTP/1.2") << QByteArray("GET /v HTTP/1.2\r\nHost: h\r\n\r\n") << QList<int>{200, 400, 505} << QByteArray()
                                  << QByteArrayList{"HTTP/1.2"} << QString();
        // An h2c upgrade is not performed and not passed on: the upstream sees plain HTTP/1.1.
        QTest::newRow("Upgrade: h2c") << QByteArray("GET /up HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n"
                                                    "Connection: Upgrade, HTTP2-Settings\r\n\r\n")
                                      << QList<int>{200} << QByteArray() << QByteArrayList{"h2c", "HTTP2-Settings", "Upgrade"} << QString();
    }
    void oneAmbiguousRequestIsNeverTwo()
    {
        QFETCH(QByteArray, request);
        QFETCH(QList<int>, accepted);
        QFETCH(QByteArray, body);
        QFETCH(QByteArrayList, absent);
        QFETCH(QString, defect);
        TestUpstream up;
        ProxyServer p(up.port(), {}, unthrottled());
        QVERIFY2(p.started, p.error.c_str());

        Connection c(p.port());
        QVERIFY(c.send(request.toStdString()));
        const auto r = c.read();
        QStringList problems;
        if (!r)
            problems << QStringLiteral("no answer");
        else if (!accepted.contains(r->status))
            problems << QStringLiteral("answered %1").arg(r->status);
        const bool refused = !r || r->status >= 400;
        if (refused) {
            if (!c.closedByPeer(2000))
                problems << QStringLiteral("the connection stayed open after the refusal");
        } else if (const auto second = c.read(500)) {
            problems << QStringLiteral("a second answer (%1): one request was read as two").arg(second->status);
        }
        std::string bytes;
        const StrictFraming framing = upstreamFraming(up, &bytes);
        const int expected = refused ? 0 : 1;
        if (framing.requests != expected)
            problems << QStringLiteral("the upstream framed %1 requests, expected %2").arg(framing.requests).arg(expected);
        if (!framing.problem.empty())
            problems << QStringLiteral("the upstream's bytes are not clean HTTP/1.1: ") + QString::fromStdString(framing.problem);
        if (!refused && framing.requests == 1) {
            // The body as the upstream decoded it (proxy mode may forward a
            // chunked body chunked: the framing is checked above, the content here).
            BodyHash want;
            want.add(body.toStdString());
            const BodyHash got = up.lastBody();
            if (got.bytes != want.bytes || got.value != want.value) {
                const std::string raw = up.requests().front();
                problems << QStringLiteral("the upstream got the body \"%1\"").arg(printable(raw.substr(raw.find("\r\n\r\n") + 4)));
            }
        }
        for (const QByteArray& a : absent)
            if (bytes.find(a.toStdString()) != std::string::npos)
                problems << QStringLiteral("the upstream got \"%1\"").arg(printable(a.toStdString()));
        if (!defect.isEmpty())
            QEXPECT_FAIL("", qPrintable(defect), Continue);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QStringLiteral("; ")) + QStringLiteral(" | upstream got: ") + printable(bytes)));

        // The next client is served normally.
        const auto ok = fetch(p.port(), get("/after"));
        QVERIFY(ok);
        QCOMPARE(ok->status, 200);
        QVERIFY(!up.requests().empty());
        QVERIFY(up.requests().back().starts_with("GET /app/after HTTP/1.1\r\n"));
    }

    // The default cooldown on POST /comments (30 s per user) must not be
    // dodged by naming the same resource as an absolute URL, which origin
    // servers route like the path.
    void absoluteFormDoesNotDodgePathRules()
    {
        TestUpstream up;
        up.setReply({201, "Created", "", "ok", 0});
        ProxyServer p(up.port());
        const std::string headers = "Host: h\r\nX-User-Id: mallory\r\nContent-Length: 2\r\n\r\nhi";
        QCOMPARE(fetch(p.port(), "POST /comments HTTP/1.1\r\n" + headers).value_or(Response{}).status, 201);
        QCOMPARE(fetch(p.port(), "POST /comments HTTP/1.1\r\n" + headers).value_or(Response{}).status, 429);
        const auto r = fetch(p.port(), "POST http://h/comments HTTP/1.1\r\n" + headers);
        QVERIFY(r);
        const bool heldBack = (r->status == 429 || r->status == 400) && up.requests().size() == 1;
        QVERIFY2(heldBack, qPrintable(QStringLiteral("answered %1; the upstream got %2 requests").arg(r->status).arg(up.requests().size())));
    }

    // Found by fuzz_listener (corpus: regression-trailer-after-the-decision):
    // a trailer field stored after the decision grows the request's storage,
    // so the decided facts (method, path, headers) point into a freed buffer
    // when the upstream's 2xx starts the cooldown (heap-use-after-free under
    // ASan). In a normal build the freed bytes no longer match: the cooldown
    // was not started, and a trailer dodged it. Trailers are now dropped.
    void aTrailerAfterTheDecisionDoesNotInvalidateIt()
    {
        TestUpstream up;
        up.setReply({201, "Created", "", "ok", 0});
        ProxyServer p(up.port());  // the default rules: the POST /comments cooldown reads the facts after the body
        auto post = [](const std::string& user, const std::string& trailer) {
            return "POST /comments HTTP/1.1\r\nHost: h\r\nX-User-Id: " + user + "\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "2\r\nhi\r\n0\r\n" + trailer + "\r\n";
        };
        // Without a trailer the chunked comment starts its cooldown.
        QCOMPARE(fetch(p.port(), post("alice", "")).value_or(Response{}).status, 201);
        QCOMPARE(fetch(p.port(), post("alice", "")).value_or(Response{}).status, 429);
        // With one, it must too.
        const std::string trailer = "X-Trailer: " + std::string(4000, 't') + "\r\n";
        QCOMPARE(fetch(p.port(), post("trudy", trailer)).value_or(Response{}).status, 201);
        const int second = fetch(p.port(), post("trudy", trailer)).value_or(Response{}).status;
        QCOMPARE(second, 429);
    }

    void expectContinueIsAnsweredOnceAndTheBodyForwardedOnce()
    {
        TestUpstream up;
        // The upstream behaves like Python's http.server or Node: it answers a
        // forwarded "Expect: 100-continue" with an interim 100 first.
        TestUpstream::Reply reply;
        reply.continueOnExpect = true;
        up.setReply(reply);
        ProxyServer p(up.port(), {}, unthrottled());
        Connection c(p.port());
        QVERIFY(c.send("POST /form HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
        const auto interim = c.read(2000);
        QVERIFY2(interim, "the listener invites the body");
        QCOMPARE(interim->status, 100);
        QVERIFY(c.send("hello"));
        const auto r = c.read(2000);
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QCOMPARE(QString::fromStdString(r->body), QStringLiteral("hello from upstream"));
        std::string bytes;
        const StrictFraming framing = upstreamFraming(up, &bytes);
        QCOMPARE(framing.requests, 1);
        QVERIFY2(framing.problem.empty(), framing.problem.c_str());
        QVERIFY(up.requests().front().ends_with("\r\n\r\nhello"));
    }

    void tenThousandHeaderFieldsAre431AndClosed()
    {
        TestUpstream up;
        ProxyServer p(up.port(), {}, unthrottled());
        std::string request = "GET /many HTTP/1.1\r\nHost: h\r\n";
        for (int i = 0; i < 10'000; ++i)
            request += "X-F" + std::to_string(i) + ": v\r\n";
        request += "\r\n";
        Connection c(p.port());
        c.sendUntilAnswered(request);
        const auto r = c.read();
        QVERIFY(r);
        QCOMPARE(r->status, 431);
        QVERIFY(c.closedByPeer());
        QCOMPARE(up.connections(), 0);
        const auto ok = fetch(p.port(), get("/after"));
        QVERIFY(ok);
        QCOMPARE(ok->status, 200);
    }

    void aThousandPipelinedRequestsAreAnsweredInOrder()
    {
        TestUpstream up;
        TestUpstream::Reply reply;
        reply.echoTarget = true;
        up.setReply(reply);
        ProxyServer p(up.port(), {}, unthrottled());
        constexpr int N = 1000;
        std::string batch;
        for (int i = 0; i < N; ++i)
            batch += get("/p" + std::to_string(i));
        Connection c(p.port());
        // Written from another thread: the answers must be read meanwhile, or
        // both sides' socket buffers fill and each waits for the other.
        bool sent = false;
        std::thread writer([&] { sent = c.send(batch); });
        int answered = 0;
        QString problem;
        for (; answered < N; ++answered) {
            const auto r = c.read(5000);
            if (!r) {
                problem = QStringLiteral("no answer");
                break;
            }
            const std::string want = "/app/p" + std::to_string(answered);
            if (r->status != 200 || r->header("x-echo-target") != want) {
                problem = QStringLiteral("%1 for %2").arg(r->status).arg(QString::fromStdString(r->header("x-echo-target")));
                break;
            }
        }
        writer.join();
        QVERIFY(sent);
        QVERIFY2(answered == N, qPrintable(QStringLiteral("answer %1 of %2: %3").arg(answered + 1).arg(N).arg(problem)));
        std::string bytes;
        const StrictFraming framing = upstreamFraming(up, &bytes);
        QCOMPARE(framing.requests, N);
        QVERIFY2(framing.problem.empty(), framing.problem.c_str());
        const auto reqs = up.requests();
        for (int i = 0; i < N; ++i)
            QVERIFY(reqs[std::size_t(i)].starts_with("GET /app/p" + std::to_string(i) + " HTTP/1.1\r\n"));
    }
};

QTEST_GUILESS_MAIN(TestSmuggling)
#include "test_smuggling.moc"
