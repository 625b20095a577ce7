// SPDX-License-Identifier: MIT
// Safelist / blocklist lookup: longest active prefix, expiry to the
// millisecond, IPv4-mapped clients, immutable edits, and a list large enough
// that a scan would show.
#include <QtTest>

#include "core/AddressList.h"
#include "TestSupport.h"

#include <random>
#include <unordered_set>

using namespace Floodgate::Core;
using namespace Floodgate::Core::Test;

class TestAddressList : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void emptyList();
    void longestPrefixWins_data();
    void longestPrefixWins();
    void expiryIsExactToTheMillisecond();
    void expiredLongestFallsBackToShorter();
    void ipv4MappedMatchesIpv4Entry();
    void ipv6Prefixes_data();
    void ipv6Prefixes();
    void familiesDoNotMix();
    void duplicatesLastWins();
    void findIsExact();
    void withAndWithoutAreCopies();
    void withoutExpired();
    void names_data();
    void names();
    void largeList();
};

void TestAddressList::emptyList()
{
    const AddressList list;
    QVERIFY(list.empty());
    QCOMPARE(list.size(), std::size_t(0));
    QVERIFY(list.match(ip("203.0.113.7"), 0) == nullptr);
    QVERIFY(list.find(cidr("203.0.113.7/32")) == nullptr);
    QCOMPARE(list.activeCount(0), std::size_t(0));

    const AddressList built(std::vector<ListEntry>{});
    QVERIFY(built.empty());
    QVERIFY(built.match(ip("::1"), 0) == nullptr);
}

void TestAddressList::longestPrefixWins_data()
{
    QTest::addColumn<QByteArray>("address");
    QTest::addColumn<QString>("reason");  // empty: no match

    QTest::newRow("inside the /16") << QByteArray("10.1.2.3") << QStringLiteral("b");
    QTest::newRow("inside the /8 only") << QByteArray("10.2.0.1") << QStringLiteral("a");
    QTest::newRow("the /32 inside the /16") << QByteArray("10.1.9.9") << QStringLiteral("c");
    QTest::newRow("outside both") << QByteArray("11.0.0.1") << QString();
    QTest::newRow("first of the /8") << QByteArray("10.0.0.0") << QStringLiteral("a");
    QTest::newRow("last of the /16") << QByteArray("10.1.255.255") << QStringLiteral("b");
}

void TestAddressList::longestPrefixWins()
{
    QFETCH(QByteArray, address);
    QFETCH(QString, reason);

    const AddressList list({listEntry("10.0.0.0/8", "a"), listEntry("10.1.0.0/16", "b"), listEntry("10.1.9.9/32", "c")});
    QCOMPARE(list.size(), std::size_t(3));
    const ListEntry* e = list.match(ip(address.toStdString()), 0);
    if (reason.isEmpty()) {
        QVERIFY(e == nullptr);
    } else {
        QVERIFY(e != nullptr);
        QCOMPARE(qs(e->reason), reason);
    }
}

void TestAddressList::expiryIsExactToTheMillisecond()
{
    const AddressList list({listEntry("203.0.113.7/32", "scraper", 5000)});
    QVERIFY(list.match(ip("203.0.113.7"), 0) != nullptr);
    QVERIFY(list.match(ip("203.0.113.7"), 4999) != nullptr);
    QVERIFY(list.match(ip("203.0.113.7"), 5000) == nullptr);
    QVERIFY(list.match(ip("203.0.113.7"), 5001) == nullptr);
    QCOMPARE(list.activeCount(4999), std::size_t(1));
    QCOMPARE(list.activeCount(5000), std::size_t(0));
    QCOMPARE(list.size(), std::size_t(1));  // expired entries stay until removed

    ListEntry e = listEntry("203.0.113.7/32", {}, 5000);
    QVERIFY(e.activeAt(4999));
    QVERIFY(!e.activeAt(5000));
    QVERIFY(listEntry("203.0.113.7/32").activeAt(std::numeric_limits<Millis>::max() - 1));
}

void TestAddressList::expiredLongestFallsBackToShorter()
{
    const AddressList list({listEntry("10.0.0.0/8", "a"), listEntry("10.1.0.0/16", "b", 5000)});
    const ListEntry* e = list.match(ip("10.1.2.3"), 4999);
    QVERIFY(e);
    QCOMPARE(qs(e->reason), QStringLiteral("b"));
    e = list.match(ip("10.1.2.3"), 5000);
    QVERIFY(e);
    QCOMPARE(qs(e->reason), QStringLiteral("a"));
}

void TestAddressList::ipv4MappedMatchesIpv4Entry()
{
    const AddressList list({listEntry("203.0.113.0/24", "net")});
    const ListEntry* e = list.match(ip("::ffff:203.0.113.7"), 0);
    QVERIFY(e);
    QCOMPARE(qs(e->range.toString()), QStringLiteral("203.0.113.0/24"));
    QVERIFY(list.match(ip("203.0.113.255"), 0));
    QVERIFY(!list.match(ip("203.0.114.0"), 0));

    // And an entry written in the mapped form is the same IPv4 range.
    const AddressList mapped({listEntry("::ffff:203.0.113.0/120", "net")});
    QVERIFY(mapped.match(ip("203.0.113.7"), 0));
    QVERIFY(mapped.find(cidr("203.0.113.0/24")));
}

void TestAddressList::ipv6Prefixes_data()
{
    QTest::addColumn<QByteArray>("address");
    QTest::addColumn<QString>("range");  // empty: no match

    QTest::newRow("inside the /48") << QByteArray("2001:db8:1:ffff::5") << QStringLiteral("2001:db8:1::/48");
    QTest::newRow("inside the /64 inside the /48") << QByteArray("2001:db8:1:2::99") << QStringLiteral("2001:db8:1:2::/64");
    QTest::newRow("the /128") << QByteArray("2001:db8:1:2::1") << QStringLiteral("2001:db8:1:2::1/128");
    QTest::newRow("next /48") << QByteArray("2001:db8:2::1") << QString();
}

void TestAddressList::ipv6Prefixes()
{
    QFETCH(QByteArray, address);
    QFETCH(QString, range);

    const AddressList list({listEntry("2001:db8:1::/48"), listEntry("2001:db8:1:2::/64"), listEntry("2001:db8:1:2::1")});
    const ListEntry* e = list.match(ip(address.toStdString()), 0);
    if (range.isEmpty()) {
        QVERIFY(e == nullptr);
    } else {
        QVERIFY(e != nullptr);
        QCOMPARE(qs(e->range.toString()), range);
    }
}

void TestAddressList::familiesDoNotMix()
{
    const AddressList v4all({listEntry("0.0.0.0/0", "all v4")});
    QVERIFY(v4all.match(ip("198.51.100.9"), 0));
    QVERIFY(!v4all.match(ip("2001:db8::1"), 0));

    const AddressList v6doc({listEntry("2001:db8::/32", "doc")});
    QVERIFY(!v6doc.match(ip("32.1.13.184"), 0));  // the same first bytes as 2001:0db8, as IPv4
    QVERIFY(v6doc.match(ip("2001:db8::1"), 0));
}

void TestAddressList::duplicatesLastWins()
{
    // "10.1.2.3/8" is the range 10.0.0.0/8 once the host bits are cleared.
    const AddressList list({listEntry("10.0.0.0/8", "first"), listEntry("192.0.2.0/24", "other"),
                            listEntry("10.1.2.3/8", "second", 9000)});
    QCOMPARE(list.size(), std::size_t(2));
    const ListEntry* e = list.match(ip("10.9.9.9"), 0);
    QVERIFY(e);
    QCOMPARE(qs(e->reason), QStringLiteral("second"));
    QCOMPARE(e->expiresAt, Millis(9000));
    QVERIFY(!list.match(ip("10.9.9.9"), 9000));
}

void TestAddressList::findIsExact()
{
    const AddressList list({listEntry("10.0.0.0/8", "a"), listEntry("10.1.0.0/16", "b", 5000)});
    const ListEntry* e = list.find(cidr("10.0.0.0/8"));
    QVERIFY(e);
    QCOMPARE(qs(e->reason), QStringLiteral("a"));
    e = list.find(cidr("10.1.0.0/16"));
    QVERIFY(e);
    QCOMPARE(qs(e->reason), QStringLiteral("b"));
    QVERIFY(list.find(cidr("10.0.0.0/9")) == nullptr);      // no entry of that length
    QVERIFY(list.find(cidr("10.1.2.3/32")) == nullptr);     // covered, but not this range
    QVERIFY(list.find(cidr("10.2.0.0/16")) == nullptr);     // that length, another range
    // find() ignores expiry: the operator may still want to see or remove it.
    QVERIFY(list.match(ip("10.1.0.1"), 6000) != nullptr);  // falls back to the /8
    QVERIFY(list.find(cidr("10.1.0.0/16")) != nullptr);
}

void TestAddressList::withAndWithoutAreCopies()
{
    const AddressList original({listEntry("10.0.0.0/8", "a")});

    const AddressList added = original.with(listEntry("192.0.2.7", "b"));
    QCOMPARE(added.size(), std::size_t(2));
    QVERIFY(added.match(ip("192.0.2.7"), 0));
    QCOMPARE(original.size(), std::size_t(1));
    QVERIFY(!original.match(ip("192.0.2.7"), 0));

    const AddressList replaced = added.with(listEntry("10.0.0.0/8", "a2"));
    QCOMPARE(replaced.size(), std::size_t(2));
    QCOMPARE(qs(replaced.match(ip("10.1.1.1"), 0)->reason), QStringLiteral("a2"));
    QCOMPARE(qs(added.match(ip("10.1.1.1"), 0)->reason), QStringLiteral("a"));

    const AddressList removed = replaced.without(cidr("10.0.0.0/8"));
    QCOMPARE(removed.size(), std::size_t(1));
    QVERIFY(!removed.match(ip("10.1.1.1"), 0));
    QVERIFY(removed.match(ip("192.0.2.7"), 0));
    QCOMPARE(replaced.size(), std::size_t(2));

    const AddressList same = removed.without(cidr("10.0.0.0/16"));  // not present: nothing changes
    QCOMPARE(same.size(), std::size_t(1));
    QVERIFY(same.match(ip("192.0.2.7"), 0));
}

void TestAddressList::withoutExpired()
{
    const AddressList list({listEntry("192.0.2.1", "ends 1000", 1000), listEntry("192.0.2.2", "ends 2000", 2000),
                            listEntry("192.0.2.3", "forever")});
    const AddressList at1000 = list.withoutExpired(1000);
    QCOMPARE(at1000.size(), std::size_t(2));
    QVERIFY(!at1000.find(cidr("192.0.2.1/32")));
    QVERIFY(at1000.find(cidr("192.0.2.2/32")));
    QVERIFY(at1000.find(cidr("192.0.2.3/32")));

    const AddressList at1999 = list.withoutExpired(1999);
    QCOMPARE(at1999.size(), std::size_t(2));
    const AddressList at2000 = list.withoutExpired(2000);
    QCOMPARE(at2000.size(), std::size_t(1));
    QVERIFY(at2000.match(ip("192.0.2.3"), 2000));
    QCOMPARE(list.size(), std::size_t(3));
}

void TestAddressList::names_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<int>("kind");    // -1: not a list kind
    QTest::addColumn<int>("source");  // -1: not a source

    QTest::newRow("safelist") << QByteArray("safelist") << int(ListKind::Safelist) << -1;
    QTest::newRow("blocklist") << QByteArray("blocklist") << int(ListKind::Blocklist) << -1;
    QTest::newRow("operator") << QByteArray("operator") << -1 << int(ListSource::Operator);
    QTest::newRow("automatic") << QByteArray("automatic") << -1 << int(ListSource::Automatic);
    QTest::newRow("import") << QByteArray("import") << -1 << int(ListSource::Import);
    QTest::newRow("unknown") << QByteArray("greylist") << -1 << -1;
    QTest::newRow("empty") << QByteArray("") << -1 << -1;
}

void TestAddressList::names()
{
    QFETCH(QByteArray, text);
    QFETCH(int, kind);
    QFETCH(int, source);

    const std::string s = text.toStdString();
    const auto k = listKindFromString(s);
    QCOMPARE(k.has_value(), kind >= 0);
    if (k) {
        QCOMPARE(label(*k), label(ListKind(kind)));
        QCOMPARE(QByteArray(toString(*k)), text);
    }
    const auto src = listSourceFromString(s);
    QCOMPARE(src.has_value(), source >= 0);
    if (src) {
        QCOMPARE(label(*src), label(ListSource(source)));
        QCOMPARE(QByteArray(toString(*src)), text);
    }
}

void TestAddressList::largeList()
{
    // 100,000 single IPv4 addresses in 10.0.0.0/8, ten /24s in 172.16.0.0/16
    // with one /32 inside, ten IPv6 /64s in 2001:db8::/32.
    std::mt19937 rng(20261121);
    std::unordered_set<std::uint32_t> inserted;
    std::vector<std::uint32_t> hosts;
    std::vector<ListEntry> entries;
    hosts.reserve(100'000);
    entries.reserve(100'021);
    while (hosts.size() < 100'000) {
        const std::uint32_t a = 0x0A000000u | (std::uint32_t(rng()) & 0x00FFFFFFu);
        if (!inserted.insert(a).second)
            continue;
        hosts.push_back(a);
        ListEntry e;
        e.range = Cidr(IpAddress::fromV4(a), 128);
        entries.push_back(std::move(e));
    }
    for (std::uint32_t x = 0; x < 10; ++x)
        entries.push_back(listEntry("172.16." + std::to_string(x) + ".0/24", "net24"));
    entries.push_back(listEntry("172.16.3.77/32", "host in net24"));
    auto v6net = [](std::uint8_t n, std::uint8_t sub) {
        IpAddress::Bytes b{};
        b[0] = 0x20;
        b[1] = 0x01;
        b[2] = 0x0d;
        b[3] = 0xb8;
        b[5] = n;
        b[7] = sub;
        return b;
    };
    for (std::uint8_t n = 0; n < 10; ++n) {
        ListEntry e;
        e.range = Cidr(IpAddress(v6net(n, 0)), 64);
        e.reason = "net64";
        entries.push_back(std::move(e));
    }

    const AddressList list(std::move(entries));
    QCOMPARE(list.size(), std::size_t(100'021));

    // Every inserted address finds its own entry.
    std::size_t wrong = 0;
    for (std::uint32_t a : hosts) {
        const IpAddress addr = IpAddress::fromV4(a);
        const ListEntry* e = list.match(addr, 0);
        if (!e || e->range.prefix128() != 128 || !(e->range.address() == addr))
            ++wrong;
    }
    QCOMPARE(wrong, std::size_t(0));

    // 10,000 addresses that were not inserted match nothing.
    std::size_t checked = 0;
    std::size_t falsePositives = 0;
    while (checked < 10'000) {
        const std::uint32_t a = 0x0A000000u | (std::uint32_t(rng()) & 0x00FFFFFFu);
        if (inserted.count(a))
            continue;
        ++checked;
        if (list.match(IpAddress::fromV4(a), 0))
            ++falsePositives;
    }
    QCOMPARE(falsePositives, std::size_t(0));

    // Inside the /24s and /64s, and just outside them.
    for (std::uint32_t x = 0; x < 10; ++x) {
        const std::uint32_t host = 0xAC100000u | (x << 8) | (std::uint32_t(rng()) & 0xFFu);
        const ListEntry* e = list.match(IpAddress::fromV4(host), 0);
        QVERIFY(e);
        if (host == 0xAC10034Du)  // 172.16.3.77
            QCOMPARE(qs(e->reason), QStringLiteral("host in net24"));
        else
            QCOMPARE(qs(e->reason), QStringLiteral("net24"));
    }
    QCOMPARE(qs(list.match(ip("172.16.3.77"), 0)->reason), QStringLiteral("host in net24"));
    QVERIFY(!list.match(ip("172.16.10.1"), 0));
    for (std::uint8_t n = 0; n < 10; ++n) {
        IpAddress::Bytes b = v6net(n, 0);
        for (std::size_t i = 8; i < 16; ++i)
            b[i] = std::uint8_t(rng());
        const ListEntry* e = list.match(IpAddress(b), 0);
        QVERIFY(e);
        QCOMPARE(qs(e->reason), QStringLiteral("net64"));
        QVERIFY(!list.match(IpAddress(v6net(n, 1)), 0));  // the next /64
    }
    QVERIFY(!list.match(IpAddress(v6net(10, 0)), 0));

    // Exact lookups and a copy with one removed.
    QVERIFY(list.find(Cidr(IpAddress::fromV4(hosts[12345]), 128)));
    const AddressList smaller = list.without(Cidr(IpAddress::fromV4(hosts[12345]), 128));
    QCOMPARE(smaller.size(), std::size_t(100'020));
    QVERIFY(!smaller.match(IpAddress::fromV4(hosts[12345]), 0));
    QVERIFY(smaller.match(IpAddress::fromV4(hosts[12346]), 0));
}

QTEST_APPLESS_MAIN(TestAddressList)
#include "test_address_list.moc"
