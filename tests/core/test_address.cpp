// SPDX-License-Identifier: GPL-3.0-or-later
// IpAddress and Cidr: strict parsing that says why, RFC 5952 output,
// IPv4-mapped addresses, masking, and the counting key of a client.
#include <QtTest>

#include "core/Address.h"
#include "TestSupport.h"

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

class TestAddress : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void parseAndPrint_data();
    void parseAndPrint();
    void rejects_data();
    void rejects();
    void ipv4Mapped();
    void words();
    void masked_data();
    void masked();
    void cidrParse_data();
    void cidrParse();
    void cidrRejects_data();
    void cidrRejects();
    void cidrConstructorMasks();
    void cidrContains_data();
    void cidrContains();
    void countingKeys_data();
    void countingKeys();
    void rotatingAddressesShareOneKey();
    void loopback_data();
    void loopback();
};

void TestAddress::parseAndPrint_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QString>("expected");
    QTest::addColumn<bool>("v4");

    QTest::newRow("ipv4") << QByteArray("203.0.113.7") << QStringLiteral("203.0.113.7") << true;
    QTest::newRow("ipv4 zeros") << QByteArray("0.0.0.0") << QStringLiteral("0.0.0.0") << true;
    QTest::newRow("ipv4 max") << QByteArray("255.255.255.255") << QStringLiteral("255.255.255.255") << true;
    QTest::newRow("full form") << QByteArray("2001:0db8:0000:0000:0000:0000:0000:0001") << QStringLiteral("2001:db8::1") << false;
    QTest::newRow("leftmost of two equal runs") << QByteArray("2001:db8:0:0:1:0:0:1") << QStringLiteral("2001:db8::1:0:0:1") << false;
    QTest::newRow("longest run, not the first") << QByteArray("0:0:1:0:0:0:1:0") << QStringLiteral("0:0:1::1:0") << false;
    QTest::newRow("single zero group not compressed") << QByteArray("2001:db8:0:1:1:1:1:1") << QStringLiteral("2001:db8:0:1:1:1:1:1") << false;
    QTest::newRow("no zeros") << QByteArray("1:2:3:4:5:6:7:8") << QStringLiteral("1:2:3:4:5:6:7:8") << false;
    QTest::newRow("longest text") << QByteArray("FFFF:abcd:1234:5678:9abc:def0:ffff:ffff")
                                  << QStringLiteral("ffff:abcd:1234:5678:9abc:def0:ffff:ffff") << false;
    QTest::newRow("unspecified") << QByteArray("::") << QStringLiteral("::") << false;
    QTest::newRow("loopback") << QByteArray("::1") << QStringLiteral("::1") << false;
    QTest::newRow("trailing run") << QByteArray("2001:db8::") << QStringLiteral("2001:db8::") << false;
    QTest::newRow("upper case") << QByteArray("FE80::1") << QStringLiteral("fe80::1") << false;
    QTest::newRow("leading zeros in groups") << QByteArray("2001:db8:00ab::0001") << QStringLiteral("2001:db8:ab::1") << false;
    QTest::newRow("bracketed") << QByteArray("[2001:db8::1]") << QStringLiteral("2001:db8::1") << false;
    QTest::newRow("mapped dotted") << QByteArray("::ffff:192.0.2.1") << QStringLiteral("192.0.2.1") << true;
    QTest::newRow("mapped upper case") << QByteArray("::FFFF:192.0.2.1") << QStringLiteral("192.0.2.1") << true;
    QTest::newRow("mapped hex") << QByteArray("::ffff:c000:201") << QStringLiteral("192.0.2.1") << true;
    QTest::newRow("mapped full form") << QByteArray("0:0:0:0:0:ffff:c000:0201") << QStringLiteral("192.0.2.1") << true;
}

void TestAddress::parseAndPrint()
{
    QFETCH(QByteArray, input);
    QFETCH(QString, expected);
    QFETCH(bool, v4);

    std::string why;
    const auto a = IpAddress::parse(input.toStdString(), &why);
    QVERIFY2(a.has_value(), why.c_str());
    QCOMPARE(qs(a->toString()), expected);
    QCOMPARE(a->isV4(), v4);
    // appendTo() (what the proxy writes into forwarded heads) gives the same text after what is there.
    std::string appended = "for=";
    a->appendTo(appended);
    QCOMPARE(qs(appended), QStringLiteral("for=") + expected);

    // The printed form reads back as the same address.
    const auto again = IpAddress::parse(a->toString());
    QVERIFY(again.has_value());
    QVERIFY(*again == *a);
}

void TestAddress::rejects_data()
{
    QTest::addColumn<QByteArray>("input");

    QTest::newRow("empty") << QByteArray("");
    QTest::newRow("octet over 255") << QByteArray("999.1.1.1");
    QTest::newRow("256") << QByteArray("256.0.0.1");
    QTest::newRow("three parts") << QByteArray("1.2.3");
    QTest::newRow("five parts") << QByteArray("1.2.3.4.5");
    QTest::newRow("leading zero") << QByteArray("01.2.3.4");
    QTest::newRow("trailing garbage") << QByteArray("1.2.3.4x");
    QTest::newRow("trailing dot") << QByteArray("1.2.3.4.");
    QTest::newRow("empty part") << QByteArray("1..2.3");
    QTest::newRow("leading space") << QByteArray(" 1.2.3.4");
    QTest::newRow("trailing space") << QByteArray("1.2.3.4 ");
    QTest::newRow("negative") << QByteArray("-1.2.3.4");
    QTest::newRow("hex octet") << QByteArray("0x1.2.3.4");
    QTest::newRow("with a prefix") << QByteArray("1.2.3.4/32");
    QTest::newRow("bracketed ipv4") << QByteArray("[1.2.3.4]");
    QTest::newRow("missing close bracket") << QByteArray("[2001:db8::1");
    QTest::newRow("two gaps") << QByteArray("::1::2");
    QTest::newRow("triple colon") << QByteArray("1:::2");
    QTest::newRow("nine groups") << QByteArray("1:2:3:4:5:6:7:8:9");
    QTest::newRow("seven groups, no gap") << QByteArray("1:2:3:4:5:6:7");
    QTest::newRow("group of five digits") << QByteArray("12345::");
    QTest::newRow("not hex") << QByteArray("g::1");
    QTest::newRow("gap standing for nothing") << QByteArray("1:2:3:4:5:6:7:8::");
    QTest::newRow("zone id") << QByteArray("fe80::1%eth0");
    QTest::newRow("single leading colon") << QByteArray(":1:2");
    QTest::newRow("single trailing colon") << QByteArray("1:2:3:4:5:6:7:");
    QTest::newRow("embedded ipv4 not at the end") << QByteArray("::1.2.3.4:1");
    QTest::newRow("embedded ipv4 too many groups") << QByteArray("1:2:3:4:5:6:7:1.2.3.4");
    QTest::newRow("bad embedded ipv4") << QByteArray("::ffff:1.2.3");
}

void TestAddress::rejects()
{
    QFETCH(QByteArray, input);

    std::string why;
    const auto a = IpAddress::parse(input.toStdString(), &why);
    QVERIFY2(!a.has_value(), qPrintable(qs(a ? a->toString() : std::string())));
    QVERIFY2(!why.empty(), "a refusal must say why");
    // Without a place for the reason it still refuses (and does not crash).
    QVERIFY(!IpAddress::parse(input.toStdString()).has_value());
}

void TestAddress::ipv4Mapped()
{
    const IpAddress mapped = ip("::ffff:192.0.2.1");
    const IpAddress plain = ip("192.0.2.1");
    QVERIFY(mapped == plain);
    QVERIFY(mapped.isV4());
    QCOMPARE(mapped.v4(), 0xC0000201u);
    QVERIFY(IpAddress::fromV4(0xC0000201u) == plain);
    QCOMPARE(qs(mapped.toString()), QStringLiteral("192.0.2.1"));

    // The 16 bytes: ::ffff:a.b.c.d.
    const IpAddress::Bytes expected{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1};
    QVERIFY(plain.bytes() == expected);

    QVERIFY(!ip("2001:db8::1").isV4());
    QVERIFY(!ip("::").isV4());
    QVERIFY(!ip("::fffe:c000:201").isV4());
    QVERIFY(IpAddress() == ip("::"));
}

void TestAddress::words()
{
    const IpAddress v6 = ip("2001:db8::1");
    QCOMPARE(v6.hi(), std::uint64_t(0x20010db800000000ULL));
    QCOMPARE(v6.lo(), std::uint64_t(1));

    const IpAddress v4 = ip("192.0.2.1");
    QCOMPARE(v4.hi(), std::uint64_t(0));
    QCOMPARE(v4.lo(), std::uint64_t(0x0000ffffc0000201ULL));
}

void TestAddress::masked_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<int>("bits");
    QTest::addColumn<QString>("expected");

    QTest::newRow("v6 /64") << QByteArray("2001:db8:1:2:aaaa::1") << 64 << QStringLiteral("2001:db8:1:2::");
    QTest::newRow("v6 /63 (inside the high word)") << QByteArray("2001:db8:1:3::") << 63 << QStringLiteral("2001:db8:1:2::");
    QTest::newRow("v6 /65 (inside the low word)") << QByteArray("2001:db8::ffff:ffff:ffff:ffff") << 65 << QStringLiteral("2001:db8:0:0:8000::");
    QTest::newRow("v6 /0") << QByteArray("2001:db8::1") << 0 << QStringLiteral("::");
    QTest::newRow("v6 /128") << QByteArray("2001:db8::1") << 128 << QStringLiteral("2001:db8::1");
    QTest::newRow("v4 /24") << QByteArray("203.0.113.7") << 96 + 24 << QStringLiteral("203.0.113.0");
    QTest::newRow("v4 /20") << QByteArray("203.0.113.7") << 96 + 20 << QStringLiteral("203.0.112.0");
    QTest::newRow("v4 /32") << QByteArray("203.0.113.7") << 128 << QStringLiteral("203.0.113.7");
    QTest::newRow("v4 /0") << QByteArray("203.0.113.7") << 96 << QStringLiteral("0.0.0.0");
    QTest::newRow("below the mapped prefix") << QByteArray("203.0.113.7") << 95 << QStringLiteral("::fffe:0:0");
}

void TestAddress::masked()
{
    QFETCH(QByteArray, input);
    QFETCH(int, bits);
    QFETCH(QString, expected);

    QCOMPARE(qs(ip(input.toStdString()).masked(bits).toString()), expected);
}

void TestAddress::cidrParse_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QString>("expected");
    QTest::addColumn<int>("prefixLength");
    QTest::addColumn<int>("prefix128");
    QTest::addColumn<bool>("v4");
    QTest::addColumn<bool>("single");

    QTest::newRow("v4 /8") << QByteArray("10.0.0.0/8") << QStringLiteral("10.0.0.0/8") << 8 << 104 << true << false;
    QTest::newRow("host bits cleared") << QByteArray("10.1.2.3/8") << QStringLiteral("10.0.0.0/8") << 8 << 104 << true << false;
    QTest::newRow("bare v4") << QByteArray("1.2.3.4") << QStringLiteral("1.2.3.4/32") << 32 << 128 << true << true;
    QTest::newRow("v4 /32") << QByteArray("203.0.113.7/32") << QStringLiteral("203.0.113.7/32") << 32 << 128 << true << true;
    QTest::newRow("v4 /0") << QByteArray("0.0.0.0/0") << QStringLiteral("0.0.0.0/0") << 0 << 96 << true << false;
    QTest::newRow("v6 /48") << QByteArray("2001:db8::/48") << QStringLiteral("2001:db8::/48") << 48 << 48 << false << false;
    QTest::newRow("v6 host bits cleared") << QByteArray("2001:db8:1:2:3::/32") << QStringLiteral("2001:db8::/32") << 32 << 32 << false << false;
    QTest::newRow("bare v6") << QByteArray("2001:db8::1") << QStringLiteral("2001:db8::1/128") << 128 << 128 << false << true;
    QTest::newRow("v6 /0") << QByteArray("::/0") << QStringLiteral("::/0") << 0 << 0 << false << false;
    QTest::newRow("mapped with a 128-bit prefix") << QByteArray("::ffff:10.0.0.0/104") << QStringLiteral("10.0.0.0/8") << 8 << 104 << true << false;
}

void TestAddress::cidrParse()
{
    QFETCH(QByteArray, input);
    QFETCH(QString, expected);
    QFETCH(int, prefixLength);
    QFETCH(int, prefix128);
    QFETCH(bool, v4);
    QFETCH(bool, single);

    std::string why;
    const auto c = Cidr::parse(input.toStdString(), &why);
    QVERIFY2(c.has_value(), why.c_str());
    QCOMPARE(qs(c->toString()), expected);
    QCOMPARE(c->prefixLength(), prefixLength);
    QCOMPARE(c->prefix128(), prefix128);
    QCOMPARE(c->isV4(), v4);
    QCOMPARE(c->isSingleAddress(), single);

    // The printed form is canonical: it parses back to the same range.
    const auto again = Cidr::parse(c->toString());
    QVERIFY(again.has_value());
    QVERIFY(*again == *c);
}

void TestAddress::cidrRejects_data()
{
    QTest::addColumn<QByteArray>("input");

    QTest::newRow("v4 /33") << QByteArray("1.2.3.4/33");
    QTest::newRow("missing prefix") << QByteArray("1.2.3.4/");
    QTest::newRow("negative prefix") << QByteArray("1.2.3.4/-1");
    QTest::newRow("leading zero in prefix") << QByteArray("1.2.3.4/08");
    QTest::newRow("v6 /129") << QByteArray("::/129");
    QTest::newRow("prefix not a number") << QByteArray("1.2.3.4/x");
    QTest::newRow("prefix with trailing garbage") << QByteArray("10.0.0.0/8x");
    QTest::newRow("two prefixes") << QByteArray("10.0.0.0/8/8");
    QTest::newRow("space in prefix") << QByteArray("10.0.0.0/ 8");
    QTest::newRow("no address") << QByteArray("/8");
    QTest::newRow("bad address") << QByteArray("999.0.0.0/8");
}

void TestAddress::cidrRejects()
{
    QFETCH(QByteArray, input);

    std::string why;
    const auto c = Cidr::parse(input.toStdString(), &why);
    QVERIFY2(!c.has_value(), qPrintable(qs(c ? c->toString() : std::string())));
    QVERIFY2(!why.empty(), "a refusal must say why");
}

void TestAddress::cidrConstructorMasks()
{
    const Cidr c(ip("10.1.2.3"), 104);
    QCOMPARE(qs(c.toString()), QStringLiteral("10.0.0.0/8"));
    QVERIFY(c == cidr("10.0.0.0/8"));
    QVERIFY(c.address() == ip("10.0.0.0"));

    const Cidr v6(ip("2001:db8:1:2:aaaa::1"), 64);
    QCOMPARE(qs(v6.toString()), QStringLiteral("2001:db8:1:2::/64"));
    QVERIFY(v6 == cidr("2001:db8:1:2::/64"));
    QVERIFY(cidr("10.1.2.3/8") == cidr("10.0.0.0/8"));
    QVERIFY(!(cidr("10.0.0.0/8") == cidr("10.0.0.0/9")));
}

void TestAddress::cidrContains_data()
{
    QTest::addColumn<QByteArray>("range");
    QTest::addColumn<QByteArray>("address");
    QTest::addColumn<bool>("contained");

    QTest::newRow("v4 inside /8") << QByteArray("10.0.0.0/8") << QByteArray("10.255.255.255") << true;
    QTest::newRow("v4 outside /8") << QByteArray("10.0.0.0/8") << QByteArray("11.0.0.0") << false;
    QTest::newRow("mapped inside /8") << QByteArray("10.0.0.0/8") << QByteArray("::ffff:10.1.2.3") << true;
    QTest::newRow("v4 /32 itself") << QByteArray("203.0.113.7/32") << QByteArray("203.0.113.7") << true;
    QTest::newRow("v4 /32 neighbour") << QByteArray("203.0.113.7/32") << QByteArray("203.0.113.8") << false;
    QTest::newRow("v4 /0 any v4") << QByteArray("0.0.0.0/0") << QByteArray("198.51.100.9") << true;
    QTest::newRow("v4 /0 not v6") << QByteArray("0.0.0.0/0") << QByteArray("2001:db8::1") << false;
    QTest::newRow("v6 inside /32") << QByteArray("2001:db8::/32") << QByteArray("2001:db8:ffff::1") << true;
    QTest::newRow("v6 outside /32") << QByteArray("2001:db8::/32") << QByteArray("2001:db9::1") << false;
    QTest::newRow("v6 /64 last address") << QByteArray("2001:db8:1:2::/64") << QByteArray("2001:db8:1:2:ffff:ffff:ffff:ffff") << true;
    QTest::newRow("v6 /64 next prefix") << QByteArray("2001:db8:1:2::/64") << QByteArray("2001:db8:1:3::") << false;
}

void TestAddress::cidrContains()
{
    QFETCH(QByteArray, range);
    QFETCH(QByteArray, address);
    QFETCH(bool, contained);

    QCOMPARE(cidr(range.toStdString()).contains(ip(address.toStdString())), contained);
}

void TestAddress::countingKeys_data()
{
    QTest::addColumn<QByteArray>("address");
    QTest::addColumn<int>("v6bits");
    QTest::addColumn<int>("v4bits");
    QTest::addColumn<QString>("expected");

    QTest::newRow("v6 /64") << QByteArray("2001:db8:1:2:aaaa::1") << 64 << 32 << QStringLiteral("2001:db8:1:2::");
    QTest::newRow("v6 /64 other host") << QByteArray("2001:db8:1:2:bbbb::2") << 64 << 32 << QStringLiteral("2001:db8:1:2::");
    QTest::newRow("v6 /48") << QByteArray("2001:db8:1:2:aaaa::1") << 48 << 32 << QStringLiteral("2001:db8:1::");
    QTest::newRow("v6 /128") << QByteArray("2001:db8:1:2:aaaa::1") << 128 << 32 << QStringLiteral("2001:db8:1:2:aaaa::1");
    QTest::newRow("v4 unchanged") << QByteArray("203.0.113.7") << 64 << 32 << QStringLiteral("203.0.113.7");
    QTest::newRow("v4 /24") << QByteArray("203.0.113.7") << 64 << 24 << QStringLiteral("203.0.113.0");
    QTest::newRow("mapped is v4, not cut to /64") << QByteArray("::ffff:198.51.100.9") << 64 << 32 << QStringLiteral("198.51.100.9");
}

void TestAddress::countingKeys()
{
    QFETCH(QByteArray, address);
    QFETCH(int, v6bits);
    QFETCH(int, v4bits);
    QFETCH(QString, expected);

    const IpAddress key = Floodgate::Core::countingKey(ip(address.toStdString()), v6bits, v4bits);
    QCOMPARE(qs(key.toString()), expected);
}

void TestAddress::rotatingAddressesShareOneKey()
{
    const IpAddress a = Floodgate::Core::countingKey(ip("2001:db8:1:2:aaaa::1"), 64);
    const IpAddress b = Floodgate::Core::countingKey(ip("2001:db8:1:2:bbbb::2"), 64);
    const IpAddress other = Floodgate::Core::countingKey(ip("2001:db8:1:3:aaaa::1"), 64);
    QVERIFY(a == b);
    QVERIFY(!(a == other));
    QVERIFY(Floodgate::Core::countingKey(ip("203.0.113.7"), 64) == ip("203.0.113.7"));
}

void TestAddress::loopback_data()
{
    QTest::addColumn<QByteArray>("address");
    QTest::addColumn<bool>("loopback");

    QTest::newRow("127.0.0.1") << QByteArray("127.0.0.1") << true;
    QTest::newRow("127.255.255.254") << QByteArray("127.255.255.254") << true;
    QTest::newRow("mapped 127.0.0.1") << QByteArray("::ffff:127.0.0.1") << true;
    QTest::newRow("::1") << QByteArray("::1") << true;
    QTest::newRow("128.0.0.1") << QByteArray("128.0.0.1") << false;
    QTest::newRow("10.0.0.1") << QByteArray("10.0.0.1") << false;
    QTest::newRow("::2") << QByteArray("::2") << false;
    QTest::newRow("::") << QByteArray("::") << false;
    QTest::newRow("2001:db8::1") << QByteArray("2001:db8::1") << false;
}

void TestAddress::loopback()
{
    QFETCH(QByteArray, address);
    QFETCH(bool, loopback);

    QCOMPARE(ip(address.toStdString()).isLoopback(), loopback);
}

QTEST_APPLESS_MAIN(TestAddress)
#include "test_address.moc"
