// SPDX-License-Identifier: GPL-3.0-or-later
// Who the client is behind trusted proxies: the one header the operator
// names, walked from the right; RFC 7239 Forwarded parsed to the letter
// (quoted values, several elements and pairs, case-insensitive names,
// obfuscated and unknown nodes that stop the walk).
#include <QtTest>

#ifndef Q_MOC_RUN
#include "http/ClientIdentity.h"
#endif

using namespace Floodgate;

namespace {

// "10.0.0.0/8 127.0.0.1" -> the trusted proxies, with the header they write.
Http::TrustedProxies proxies(const QString& ranges, const QString& header)
{
    std::vector<Core::Cidr> out;
    for (const QString& r : ranges.split(QLatin1Char(' '), Qt::SkipEmptyParts))
        out.push_back(*Core::Cidr::parse(r.toStdString()));
    return Http::TrustedProxies(std::move(out), header.toStdString());
}

// The nodes as one string: "a|b|-" ("-" for an element without a usable for=).
QString nodesText(const std::vector<std::optional<std::string>>& nodes)
{
    QStringList out;
    for (const auto& n : nodes)
        out << (n ? QString::fromStdString(*n) : QStringLiteral("-"));
    return out.join(QLatin1Char('|'));
}

} // namespace

class TestClientIdentity : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void forwardedElementsAndPairs_data()
    {
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("nodes");
        QTest::newRow("token") << QStringLiteral("for=192.0.2.60") << QStringLiteral("192.0.2.60");
        QTest::newRow("several pairs") << QStringLiteral("for=192.0.2.60;proto=http;by=203.0.113.43") << QStringLiteral("192.0.2.60");
        QTest::newRow("for not first") << QStringLiteral("proto=https; for=192.0.2.61 ;by=10.0.0.1") << QStringLiteral("192.0.2.61");
        QTest::newRow("quoted IPv6 with port") << QStringLiteral("for=\"[2001:db8:cafe::17]:4711\"") << QStringLiteral("[2001:db8:cafe::17]:4711");
        QTest::newRow("name case") << QStringLiteral("For=192.0.2.1, FOR=\"192.0.2.2\"") << QStringLiteral("192.0.2.1|192.0.2.2");
        QTest::newRow("several elements") << QStringLiteral("for=192.0.2.43, for=198.51.100.17;by=203.0.113.60;proto=http;host=example.com")
                                          << QStringLiteral("192.0.2.43|198.51.100.17");
        QTest::newRow("obfuscated and unknown") << QStringLiteral("for=_hidden, for=unknown, for=\"_SEVKISEK\"")
                                                << QStringLiteral("_hidden|unknown|_SEVKISEK");
        QTest::newRow("comma and semicolon inside quotes") << QStringLiteral("for=192.0.2.3;ext=\"a,b;c\", for=192.0.2.4")
                                                          << QStringLiteral("192.0.2.3|192.0.2.4");
        QTest::newRow("escaped quote") << QStringLiteral("for=192.0.2.5;ext=\"x\\\",y\", for=192.0.2.6") << QStringLiteral("192.0.2.5|192.0.2.6");
        QTest::newRow("no for") << QStringLiteral("for=192.0.2.7, proto=https;by=10.0.0.1") << QStringLiteral("192.0.2.7|-");
        QTest::newRow("for twice in one element") << QStringLiteral("for=192.0.2.8;for=192.0.2.9") << QStringLiteral("-");
        QTest::newRow("pair without =") << QStringLiteral("for=192.0.2.10, garbage, for=192.0.2.11") << QStringLiteral("192.0.2.10|-|192.0.2.11");
        QTest::newRow("unclosed quote swallows the rest") << QStringLiteral("for=\"192.0.2.12, for=192.0.2.13") << QStringLiteral("-");
        QTest::newRow("empty value") << QStringLiteral("for=") << QStringLiteral("-");
        QTest::newRow("empty elements skipped") << QStringLiteral(" , for=192.0.2.14 ,, ") << QStringLiteral("192.0.2.14");
        QTest::newRow("empty pairs allowed") << QStringLiteral(";for=192.0.2.15;;proto=http;") << QStringLiteral("192.0.2.15");
        QTest::newRow("unquoted brackets (lenient)") << QStringLiteral("for=[2001:db8::5]:80") << QStringLiteral("[2001:db8::5]:80");
        QTest::newRow("text after a value") << QStringLiteral("for=192.0.2.16 junk, for=192.0.2.17") << QStringLiteral("-|192.0.2.17");
    }
    void forwardedElementsAndPairs()
    {
        QFETCH(QString, value);
        QFETCH(QString, nodes);
        QCOMPARE(nodesText(Http::forwardedForNodes(value.toStdString())), nodes);
    }

    void theClientBehindTrustedProxies_data()
    {
        QTest::addColumn<QString>("header");    // --real-ip-header
        QTest::addColumn<QString>("value");     // what the trusted peer sent in it
        QTest::addColumn<QString>("peer");
        QTest::addColumn<QString>("client");
        const QString xff = QStringLiteral("X-Forwarded-For");
        const QString fwd = QStringLiteral("Forwarded");
        const QString proxy = QStringLiteral("10.0.0.1");
        // X-Forwarded-For (and any list header).
        QTest::newRow("xff one hop") << xff << QStringLiteral("203.0.113.9") << proxy << QStringLiteral("203.0.113.9");
        QTest::newRow("xff over trusted hops") << xff << QStringLiteral("203.0.113.9, 10.0.0.7,10.0.0.8") << proxy << QStringLiteral("203.0.113.9");
        QTest::newRow("xff leftmost spoof") << xff << QStringLiteral("1.2.3.4, 203.0.113.9") << proxy << QStringLiteral("203.0.113.9");
        QTest::newRow("xff with ports") << xff << QStringLiteral("[2001:db8::9]:443, 203.0.113.9:5000") << proxy << QStringLiteral("203.0.113.9");
        QTest::newRow("xff garbage stops the walk") << xff << QStringLiteral("203.0.113.9, garbage, 10.0.0.7") << proxy << QStringLiteral("10.0.0.7");
        QTest::newRow("xff unknown rightmost") << xff << QStringLiteral("203.0.113.9, unknown") << proxy << proxy;
        QTest::newRow("xff mapped IPv4") << xff << QStringLiteral("::ffff:203.0.113.5") << proxy << QStringLiteral("203.0.113.5");
        QTest::newRow("xff all trusted") << xff << QStringLiteral("10.0.0.5, 10.0.0.6") << proxy << QStringLiteral("10.0.0.5");
        QTest::newRow("X-Real-IP") << QStringLiteral("X-Real-IP") << QStringLiteral("203.0.113.20") << proxy << QStringLiteral("203.0.113.20");
        QTest::newRow("untrusted peer") << xff << QStringLiteral("203.0.113.9") << QStringLiteral("198.51.100.1") << QStringLiteral("198.51.100.1");
        QTest::newRow("nothing sent") << xff << QString() << proxy << proxy;
        // Forwarded (RFC 7239).
        QTest::newRow("fwd token") << fwd << QStringLiteral("for=192.0.2.60;proto=http;by=203.0.113.43") << proxy << QStringLiteral("192.0.2.60");
        QTest::newRow("fwd quoted IPv6 and port") << fwd << QStringLiteral("for=\"[2001:db8:cafe::17]:4711\"") << proxy
                                                  << QStringLiteral("2001:db8:cafe::17");
        QTest::newRow("fwd quoted IPv4 and port") << fwd << QStringLiteral("for=\"192.0.2.45:8080\"") << proxy << QStringLiteral("192.0.2.45");
        QTest::newRow("fwd name case") << fwd << QStringLiteral("FoR=192.0.2.61") << proxy << QStringLiteral("192.0.2.61");
        QTest::newRow("fwd rightmost untrusted") << fwd << QStringLiteral("for=192.0.2.43, for=198.51.100.17") << proxy
                                                 << QStringLiteral("198.51.100.17");
        QTest::newRow("fwd over trusted hops") << fwd << QStringLiteral("for=192.0.2.43, for=10.0.0.9;by=10.0.0.1") << proxy
                                               << QStringLiteral("192.0.2.43");
        QTest::newRow("fwd obfuscated rightmost") << fwd << QStringLiteral("for=192.0.2.43, for=_hidden") << proxy << proxy;
        QTest::newRow("fwd obfuscated behind a trusted hop") << fwd << QStringLiteral("for=192.0.2.43, for=_hidden, for=10.0.0.9") << proxy
                                                             << QStringLiteral("10.0.0.9");
        QTest::newRow("fwd unknown") << fwd << QStringLiteral("for=unknown") << proxy << proxy;
        QTest::newRow("fwd element without for") << fwd << QStringLiteral("for=192.0.2.43, proto=https") << proxy << proxy;
        QTest::newRow("fwd malformed rightmost") << fwd << QStringLiteral("for=192.0.2.43, for=\"192.0.2.44") << proxy << proxy;
        QTest::newRow("fwd malformed far left") << fwd << QStringLiteral("for=\"oops, for=192.0.2.43;by=x") << proxy << proxy;
        QTest::newRow("fwd quoted comma") << fwd << QStringLiteral("for=192.0.2.46;ext=\"a, for=6.6.6.6\"") << proxy << QStringLiteral("192.0.2.46");
        // The header not named is not read even if it is the only one sent:
        // an X-Forwarded-For value given to the Forwarded reader is no hop.
        QTest::newRow("fwd reader given a bare address") << fwd << QStringLiteral("203.0.113.9") << proxy << proxy;
    }
    void theClientBehindTrustedProxies()
    {
        QFETCH(QString, header);
        QFETCH(QString, value);
        QFETCH(QString, peer);
        QFETCH(QString, client);
        const auto id = Http::resolveClient(*Core::IpAddress::parse(peer.toStdString()), value.toStdString(),
                                            proxies(QStringLiteral("10.0.0.0/8"), header));
        QCOMPARE(QString::fromStdString(id.client.toString()), client);
    }

    // What proxy mode forwards as X-Forwarded-For before the peer.
    void theChainAsTheProxiesToldIt()
    {
        const auto peer = *Core::IpAddress::parse("10.0.0.1");
        const auto fwd = Http::resolveClient(peer, "for=192.0.2.43;proto=https, For=\"[2001:db8::1]:4711\", for=_hidden, by=x, for=\"a,b\"",
                                             proxies(QStringLiteral("10.0.0.0/8"), QStringLiteral("Forwarded")));
        QCOMPARE(QString::fromStdString(fwd.chain), QStringLiteral("192.0.2.43, 2001:db8::1, _hidden, unknown, unknown"));
        const auto xff = Http::resolveClient(peer, "1.2.3.4, 203.0.113.9", proxies(QStringLiteral("10.0.0.0/8"), QStringLiteral("X-Forwarded-For")));
        QCOMPARE(QString::fromStdString(xff.chain), QStringLiteral("1.2.3.4, 203.0.113.9"));
        const auto untrusted = Http::resolveClient(*Core::IpAddress::parse("198.51.100.1"), "1.2.3.4",
                                                   proxies(QStringLiteral("10.0.0.0/8"), QStringLiteral("X-Forwarded-For")));
        QVERIFY(untrusted.chain.empty());
    }

    void headerNames_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("ok");
        QTest::newRow("X-Forwarded-For") << QStringLiteral("X-Forwarded-For") << true;
        QTest::newRow("Forwarded") << QStringLiteral("Forwarded") << true;
        QTest::newRow("CF-Connecting-IP") << QStringLiteral("CF-Connecting-IP") << true;
        QTest::newRow("empty") << QString() << false;
        QTest::newRow("colon") << QStringLiteral("X-Real-IP:") << false;
        QTest::newRow("space") << QStringLiteral("X Real") << false;
    }
    void headerNames()
    {
        QFETCH(QString, name);
        QFETCH(bool, ok);
        QCOMPARE(Http::isHeaderName(name.toStdString()), ok);
    }
};

QTEST_GUILESS_MAIN(TestClientIdentity)
#include "test_client_identity.moc"
