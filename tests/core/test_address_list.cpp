// SPDX-License-Identifier: GPL-3.0-or-later
// Safelist / blocklist lookup: longest active prefix, expiry to the
// millisecond, IPv4-mapped clients, immutable edits, and a list large enough
// that a scan would show. Edits kept beside the base (the list is not
// rebuilt for one) and folded into it read exactly as a list built afresh
// with the same entries.
#include <QtTest>

#include "core/AddressList.h"
#include "TestSupport.h"

#include <algorithm>
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

    // Edits pending beside the base, and their compaction.
    void editsDoNotTouchTheListTheyCameFrom();
    void removingABaseEntry();
    void aPendingEntryExpires();
    void overlapAcrossBaseAndEdits();
    void replacedEntriesKeepOrMoveTheirPlace();
    void compactionKeepsEverything();
    void rebaseCarriesTheEditsMadeMeanwhile();
    void rebaseRefusesAListThatDoesNotDescend();
    void manyEditsAtOnceBuildTheList();
    void safelistAgainstPendingBlocklistEdits();
    void randomEditsReadAsAFreshList();
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


// ---- edits pending beside the base -----------------------------------------

namespace {

// What a list holds, in order, as "range reason expiry" lines: equal for two
// lists only when every entry and its place are.
QStringList described(const AddressList& list)
{
    QStringList out;
    for (const ListEntry& e : list.entries())
        out << QStringLiteral("%1 %2 %3").arg(qs(e.range.toString()), qs(e.reason)).arg(e.expiresAt);
    QStringList visited;
    list.forEach([&](const ListEntry& e) { visited << QStringLiteral("%1 %2 %3").arg(qs(e.range.toString()), qs(e.reason)).arg(e.expiresAt); });
    if (visited != out)
        return {QStringLiteral("forEach and entries() differ")};
    return out;
}

QString reasonAt(const AddressList& list, std::string_view address, Millis now)
{
    const ListEntry* e = list.match(ip(address), now);
    return e ? qs(e->reason) : QStringLiteral("-");
}

} // namespace

void TestAddressList::editsDoNotTouchTheListTheyCameFrom()
{
    // A reader holding a list while edits are made from it (the engine
    // publishes the edited list; deciding threads still hold the one before)
    // reads it unchanged, before and after the edits are compacted.
    const AddressList base({listEntry("10.0.0.0/8", "a"), listEntry("192.0.2.7", "b")});
    const AddressList held = base.with(listEntry("198.51.100.1", "c"));
    const QStringList before = described(held);
    const ListEntry* c = held.match(ip("198.51.100.1"), 0);
    QVERIFY(c);

    AddressList next = held.without(cidr("192.0.2.7/32")).with(listEntry("10.0.0.0/8", "a2")).with(listEntry("198.51.100.2", "d"));
    next = next.compacted();
    QCOMPARE(next.pendingEdits(), std::size_t(0));
    QCOMPARE(described(held), before);
    QCOMPARE(held.match(ip("198.51.100.1"), 0), c);  // the very same entry, still alive
    QCOMPARE(reasonAt(held, "192.0.2.7", 0), QStringLiteral("b"));
    QCOMPARE(reasonAt(held, "10.1.1.1", 0), QStringLiteral("a"));
    QCOMPARE(held.pendingEdits(), std::size_t(1));
    QCOMPARE(reasonAt(next, "192.0.2.7", 0), QStringLiteral("-"));
    QCOMPARE(reasonAt(next, "10.1.1.1", 0), QStringLiteral("a2"));
    QCOMPARE(reasonAt(next, "198.51.100.2", 0), QStringLiteral("d"));
}

void TestAddressList::removingABaseEntry()
{
    const AddressList base({listEntry("10.0.0.0/8", "wide"), listEntry("10.1.0.0/16", "narrow"), listEntry("192.0.2.7", "host")});
    const AddressList removed = base.without(cidr("10.1.0.0/16"));
    QCOMPARE(removed.pendingEdits(), std::size_t(1));
    QCOMPARE(removed.size(), std::size_t(2));
    QVERIFY(!removed.find(cidr("10.1.0.0/16")));
    QCOMPARE(reasonAt(removed, "10.1.2.3", 0), QStringLiteral("wide"));  // the shorter prefix applies again
    QCOMPARE(described(removed), QStringList({QStringLiteral("10.0.0.0/8 wide %1").arg(NeverExpires),
                                              QStringLiteral("192.0.2.7/32 host %1").arg(NeverExpires)}));
    QCOMPARE(removed.activeCount(0), std::size_t(2));
    // Removed twice: nothing more changes; added back: it applies again, last.
    QCOMPARE(removed.without(cidr("10.1.0.0/16")).size(), std::size_t(2));
    const AddressList back = removed.with(listEntry("10.1.0.0/16", "again"));
    QCOMPARE(back.size(), std::size_t(3));
    QCOMPARE(reasonAt(back, "10.1.2.3", 0), QStringLiteral("again"));
    QCOMPARE(described(back).last(), QStringLiteral("10.1.0.0/16 again %1").arg(NeverExpires));
    // Compacted, the removal stays a removal.
    const AddressList folded = removed.compacted();
    QCOMPARE(folded.size(), std::size_t(2));
    QVERIFY(!folded.find(cidr("10.1.0.0/16")));
    QCOMPARE(reasonAt(folded, "10.1.2.3", 0), QStringLiteral("wide"));
    // The base entry a removal hides, removed from a list where it was
    // replaced first.
    const AddressList replacedThenRemoved = base.with(listEntry("192.0.2.7", "host2")).without(cidr("192.0.2.7/32"));
    QVERIFY(!replacedThenRemoved.match(ip("192.0.2.7"), 0));
    QCOMPARE(replacedThenRemoved.size(), std::size_t(2));
}

void TestAddressList::aPendingEntryExpires()
{
    const AddressList base({listEntry("10.0.0.0/8", "base, forever"), listEntry("10.2.0.0/16", "base /16, ends 500", 500)});
    const AddressList edited = base.with(listEntry("10.1.0.0/16", "pending, ends 1000", 1000))
                                   .with(listEntry("10.2.0.0/16", "pending replaces the /16, ends 3000", 3000));
    QCOMPARE(reasonAt(edited, "10.1.2.3", 999), QStringLiteral("pending, ends 1000"));
    QCOMPARE(reasonAt(edited, "10.1.2.3", 1000), QStringLiteral("base, forever"));  // to the millisecond, then the shorter prefix
    // The pending replacement decides for its range: the base's /16 ending at
    // 500 is not what applies after 500.
    QCOMPARE(reasonAt(edited, "10.2.0.1", 600), QStringLiteral("pending replaces the /16, ends 3000"));
    QCOMPARE(reasonAt(edited, "10.2.0.1", 3000), QStringLiteral("base, forever"));
    QCOMPARE(edited.activeCount(999), std::size_t(3));
    QCOMPARE(edited.activeCount(1000), std::size_t(2));
    QCOMPARE(edited.activeCount(3000), std::size_t(1));
    QVERIFY(edited.find(cidr("10.1.0.0/16")));  // find() ignores expiry

    const AddressList pruned = edited.withoutExpired(1000);
    QCOMPARE(pruned.size(), std::size_t(2));
    QVERIFY(!pruned.find(cidr("10.1.0.0/16")));
    QCOMPARE(pruned.find(cidr("10.2.0.0/16"))->expiresAt, Millis(3000));
    QCOMPARE(pruned.pendingEdits(), std::size_t(0));
    // Nothing expired yet: the same list, edits still pending.
    const AddressList same = edited.withoutExpired(400);
    QCOMPARE(same.pendingEdits(), edited.pendingEdits());
    QCOMPARE(described(same), described(edited));
    // The edited() path (storage's) expires the same way.
    const AddressList viaStore = base.edited({listEntry("10.1.0.0/16", "stored, ends 1000", 1000)}, {});
    QCOMPARE(reasonAt(viaStore, "10.1.0.1", 999), QStringLiteral("stored, ends 1000"));
    QCOMPARE(reasonAt(viaStore, "10.1.0.1", 1000), QStringLiteral("base, forever"));
}

void TestAddressList::overlapAcrossBaseAndEdits()
{
    const AddressList base({listEntry("10.1.0.0/16", "base /16"), listEntry("2001:db8::/32", "base v6 /32")});
    // Longer prefixes added beside a shorter base entry, and a shorter one
    // around it.
    const AddressList edited = base.with(listEntry("10.1.2.0/24", "pending /24"))
                                   .with(listEntry("10.1.2.3", "pending /32"))
                                   .with(listEntry("10.0.0.0/8", "pending /8"))
                                   .with(listEntry("2001:db8:1::/48", "pending v6 /48"));
    QCOMPARE(reasonAt(edited, "10.1.2.3", 0), QStringLiteral("pending /32"));
    QCOMPARE(reasonAt(edited, "10.1.2.4", 0), QStringLiteral("pending /24"));
    QCOMPARE(reasonAt(edited, "10.1.3.1", 0), QStringLiteral("base /16"));
    QCOMPARE(reasonAt(edited, "10.2.0.1", 0), QStringLiteral("pending /8"));
    QCOMPARE(reasonAt(edited, "2001:db8:1::5", 0), QStringLiteral("pending v6 /48"));
    QCOMPARE(reasonAt(edited, "2001:db8:2::5", 0), QStringLiteral("base v6 /32"));
    QCOMPARE(reasonAt(edited, "::ffff:10.1.2.3", 0), QStringLiteral("pending /32"));  // IPv4-mapped
    QCOMPARE(reasonAt(edited, "11.0.0.1", 0), QStringLiteral("-"));
    // A pending /24 that ended lets the base /16 apply, not the /8.
    const AddressList ended = edited.with(listEntry("10.1.2.0/24", "pending /24, ends 10", 10));
    QCOMPARE(reasonAt(ended, "10.1.2.4", 10), QStringLiteral("base /16"));
    // The base /16 removed by an edit: the pending /8 covers it.
    const AddressList removed = edited.without(cidr("10.1.0.0/16"));
    QCOMPARE(reasonAt(removed, "10.1.3.1", 0), QStringLiteral("pending /8"));
    QCOMPARE(reasonAt(removed, "10.1.2.4", 0), QStringLiteral("pending /24"));
    // Compacted, every answer is the same.
    for (const AddressList* l : {&edited, &ended, &removed}) {
        const AddressList folded = l->compacted();
        for (const char* a : {"10.1.2.3", "10.1.2.4", "10.1.3.1", "10.2.0.1", "2001:db8:1::5", "2001:db8:2::5", "11.0.0.1"})
            for (Millis t : {Millis(0), Millis(10)})
                QCOMPARE(reasonAt(folded, a, t), reasonAt(*l, a, t));
    }
}

void TestAddressList::replacedEntriesKeepOrMoveTheirPlace()
{
    // As before the edits were kept beside the base: with() replaces in
    // place (as a list built with both keeps the first one's place),
    // edited() puts last (storage's "remove what the batch touched, add what
    // it put").
    const AddressList base({listEntry("192.0.2.1", "one"), listEntry("192.0.2.2", "two"), listEntry("192.0.2.3", "three")});
    QCOMPARE(described(base.with(listEntry("192.0.2.1", "one again"))),
             described(AddressList({listEntry("192.0.2.1", "one again"), listEntry("192.0.2.2", "two"), listEntry("192.0.2.3", "three")})));
    QCOMPARE(described(base.edited({listEntry("192.0.2.1", "one again")}, {})),
             described(AddressList({listEntry("192.0.2.2", "two"), listEntry("192.0.2.3", "three"), listEntry("192.0.2.1", "one again")})));
    // A range put last and then replaced in place stays last.
    const AddressList twice = base.edited({listEntry("192.0.2.2", "two, moved")}, {}).with(listEntry("192.0.2.2", "two, replaced"));
    QCOMPARE(described(twice),
             described(AddressList({listEntry("192.0.2.1", "one"), listEntry("192.0.2.3", "three"), listEntry("192.0.2.2", "two, replaced")})));
    // A batch: its removals, then its puts; a range both removed and put is on the list.
    const AddressList batch = base.edited({listEntry("192.0.2.9", "nine"), listEntry("192.0.2.3", "three, put")},
                                          {cidr("192.0.2.1/32"), cidr("192.0.2.3/32")});
    QCOMPARE(described(batch),
             described(AddressList({listEntry("192.0.2.2", "two"), listEntry("192.0.2.9", "nine"), listEntry("192.0.2.3", "three, put")})));
}

void TestAddressList::compactionKeepsEverything()
{
    std::vector<ListEntry> start;
    for (int i = 0; i < 200; ++i)
        start.push_back(listEntry("10.0." + std::to_string(i) + ".0/24", "net " + std::to_string(i), i % 2 ? NeverExpires : Millis(1000 + i)));
    AddressList list(std::move(start));
    for (int i = 0; i < 100; ++i) {
        list = list.with(listEntry("10.0." + std::to_string(i) + ".7", "host " + std::to_string(i)));
        if (i % 3 == 0)
            list = list.without(cidr("10.0." + std::to_string(i + 100) + ".0/24"));
        if (i % 5 == 0)
            list = list.edited({listEntry("10.0." + std::to_string(i) + ".0/24", "net moved " + std::to_string(i), 5000)}, {});
    }
    QVERIFY(list.pendingEdits() > 0);
    QVERIFY(list.wantsCompaction());  // 100 + 34 + 20 edits on 200 entries
    const AddressList folded = list.compacted();
    QCOMPARE(folded.pendingEdits(), std::size_t(0));
    QVERIFY(!folded.wantsCompaction());
    QCOMPARE(folded.size(), list.size());
    QCOMPARE(described(folded), described(list));
    for (int i = 0; i < 256; ++i)
        for (const std::string host : {".7", ".8"})
            for (Millis t : {Millis(0), Millis(1100), Millis(5000)}) {
                const std::string a = "10.0." + std::to_string(i) + host;
                QCOMPARE(reasonAt(folded, a, t), reasonAt(list, a, t));
            }
    for (Millis t : {Millis(0), Millis(1100), Millis(5000)})
        QCOMPARE(folded.activeCount(t), list.activeCount(t));
}

void TestAddressList::rebaseCarriesTheEditsMadeMeanwhile()
{
    const AddressList base({listEntry("192.0.2.1", "one"), listEntry("192.0.2.2", "two"), listEntry("192.0.2.3", "three")});
    // Edits pending when the compaction starts...
    const AddressList earlier = base.with(listEntry("192.0.2.2", "two, in place")).with(listEntry("192.0.2.4", "four"))
                                    .without(cidr("192.0.2.3/32"));
    const AddressList merged = earlier.compacted();
    // ...and the ones published while it ran: an entry of the merged base
    // replaced in place, one put last, one removed, one added and removed,
    // one new.
    const AddressList later = earlier.with(listEntry("192.0.2.4", "four, in place"))
                                  .edited({listEntry("192.0.2.1", "one, moved")}, {})
                                  .without(cidr("192.0.2.2/32"))
                                  .with(listEntry("192.0.2.5", "five"))
                                  .without(cidr("192.0.2.5/32"))
                                  .with(listEntry("192.0.2.6", "six"))
                                  .with(listEntry("192.0.2.3", "three, back"));
    const auto rebased = later.rebased(earlier, merged);
    QVERIFY(rebased);
    QCOMPARE(described(*rebased), described(later));
    QCOMPARE(rebased->size(), later.size());
    QVERIFY(rebased->pendingEdits() < later.pendingEdits());  // what earlier had pending is in the base now
    for (const char* a : {"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5", "192.0.2.6"})
        QCOMPARE(reasonAt(*rebased, a, 0), reasonAt(later, a, 0));
    // Edited further and compacted again, still the same as the edits alone.
    const AddressList further = rebased->with(listEntry("192.0.2.1", "one, again")).without(cidr("192.0.2.4/32"));
    const AddressList expected = later.with(listEntry("192.0.2.1", "one, again")).without(cidr("192.0.2.4/32"));
    QCOMPARE(described(further), described(expected));
    QCOMPARE(described(further.compacted()), described(expected));
    // Nothing published meanwhile: the merged list itself.
    const auto unchanged = earlier.rebased(earlier, merged);
    QVERIFY(unchanged);
    QCOMPARE(unchanged->pendingEdits(), std::size_t(0));
    QCOMPARE(described(*unchanged), described(earlier));
}

void TestAddressList::rebaseRefusesAListThatDoesNotDescend()
{
    const AddressList base({listEntry("192.0.2.1", "one")});
    const AddressList earlier = base.with(listEntry("192.0.2.2", "two"));
    const AddressList merged = earlier.compacted();
    // Replaced as a whole meanwhile (a reload): another base.
    QVERIFY(!AddressList({listEntry("192.0.2.9", "nine")}).rebased(earlier, merged));
    // The same base, but another line of edits (it never held earlier's).
    QVERIFY(!base.with(listEntry("192.0.2.3", "three")).rebased(earlier, merged));
    QVERIFY(!base.rebased(earlier, merged));
}

void TestAddressList::manyEditsAtOnceBuildTheList()
{
    // An import's worth of entries in one batch builds a new base rather
    // than as many pending edits; it reads the same.
    std::vector<ListEntry> puts;
    for (std::uint32_t i = 0; i < 5000; ++i) {
        ListEntry e;
        e.range = Cidr(IpAddress::fromV4(0x0b000000u + i), 128);
        e.reason = "import";
        puts.push_back(e);
    }
    const AddressList base({listEntry("11.0.0.0/8", "wide"), listEntry("11.0.0.5", "old five")});
    const AddressList imported = base.edited(puts, {cidr("11.0.0.0/8")});
    QCOMPARE(imported.pendingEdits(), std::size_t(0));
    QCOMPARE(imported.size(), std::size_t(5000));
    QCOMPARE(reasonAt(imported, "11.0.0.5", 0), QStringLiteral("import"));
    QCOMPARE(reasonAt(imported, "11.0.200.0", 0), QStringLiteral("-"));
    const AddressList withMany = base.with(puts);
    QCOMPARE(withMany.size(), std::size_t(5001));
    QCOMPARE(qs(withMany.entries()[1].reason), QStringLiteral("import"));  // replaced in its place
    QCOMPARE(reasonAt(withMany, "11.0.200.0", 0), QStringLiteral("wide"));
}

void TestAddressList::safelistAgainstPendingBlocklistEdits()
{
    ListSet lists;
    lists.safelist = std::make_shared<const AddressList>(AddressList({listEntry("10.1.0.0/16", "safe /16")}).with(listEntry("10.1.2.3", "safe host")));
    lists.blocklist = std::make_shared<const AddressList>(AddressList({listEntry("10.1.2.0/24", "block /24")}).with(listEntry("10.1.0.0/16", "block /16")));
    ListKind kind = ListKind::Safelist;
    // The longest active prefix across the lists; on a tie the blocklist.
    QCOMPARE(qs(lists.match(ip("10.1.2.3"), 0, &kind)->reason), QStringLiteral("safe host"));
    QCOMPARE(label(kind), label(ListKind::Safelist));
    QCOMPARE(qs(lists.match(ip("10.1.2.4"), 0, &kind)->reason), QStringLiteral("block /24"));
    QCOMPARE(label(kind), label(ListKind::Blocklist));
    QCOMPARE(qs(lists.match(ip("10.1.9.9"), 0, &kind)->reason), QStringLiteral("block /16"));
    QCOMPARE(label(kind), label(ListKind::Blocklist));
    // The blocklist's /16 removed by an edit: the safelist's /16 decides.
    lists.blocklist = std::make_shared<const AddressList>(lists.blocklist->without(cidr("10.1.0.0/16")));
    QCOMPARE(qs(lists.match(ip("10.1.9.9"), 0, &kind)->reason), QStringLiteral("safe /16"));
    QCOMPARE(label(kind), label(ListKind::Safelist));
    QCOMPARE(lists.active(ListKind::Blocklist, 0).size(), std::size_t(1));
    QCOMPARE(lists.active(ListKind::Safelist, 0).size(), std::size_t(2));
}

void TestAddressList::randomEditsReadAsAFreshList()
{
    // Random edits, compactions and rebases against a plain vector edited
    // the way the list was before edits were kept beside the base: after
    // each step the list reads exactly as one built afresh from the vector
    // (same entries in the same order, same answers at several times).
    std::mt19937 rng(20261124);
    auto pick = [&](int n) { return int(rng() % std::uint32_t(n)); };
    auto randomRange = [&] {
        static const int prefixes[] = {8, 16, 24, 28, 32};
        const int p = prefixes[pick(5)];
        const std::string text = "10." + std::to_string(pick(2)) + "." + std::to_string(pick(4)) + "." + std::to_string(pick(8)) + "/"
            + std::to_string(p);
        return cidr(text);
    };
    auto randomEntry = [&](int serial) {
        ListEntry e;
        e.range = randomRange();
        e.reason = "r" + std::to_string(serial);
        e.expiresAt = pick(3) == 0 ? Millis(100 + pick(200)) : NeverExpires;
        return e;
    };
    std::vector<ListEntry> model;
    auto eraseRange = [&](const Cidr& r) { std::erase_if(model, [&](const ListEntry& e) { return e.range == r; }); };
    AddressList list;
    std::optional<AddressList> compactionStart;  // a compaction "running" since this list
    int serial = 0;
    for (int step = 0; step < 3000; ++step) {
        const int op = pick(100);
        if (op < 35) {
            const ListEntry e = randomEntry(++serial);
            const auto it = std::find_if(model.begin(), model.end(), [&](const ListEntry& m) { return m.range == e.range; });
            if (it != model.end())
                *it = e;
            else
                model.push_back(e);
            list = list.with(e);
        } else if (op < 55) {
            const Cidr r = randomRange();
            eraseRange(r);
            list = list.without(r);
        } else if (op < 85) {
            std::vector<ListEntry> puts;
            std::vector<Cidr> removals;
            for (int k = pick(3); k > 0; --k)
                removals.push_back(randomRange());
            for (int k = pick(3); k > 0; --k)
                puts.push_back(randomEntry(++serial));
            for (const Cidr& r : removals)
                eraseRange(r);
            for (const ListEntry& e : puts) {
                eraseRange(e.range);
                model.push_back(e);
            }
            list = list.edited(puts, removals);
        } else if (op < 90) {
            const Millis now = 100 + pick(200);
            std::erase_if(model, [&](const ListEntry& e) { return !e.activeAt(now); });
            list = list.withoutExpired(now);
            compactionStart.reset();  // a new base: a running compaction would be refused
        } else if (op < 95) {
            if (!compactionStart) {
                compactionStart = list;
            } else {
                const auto rebased = list.rebased(*compactionStart, compactionStart->compacted());
                QVERIFY(rebased);
                list = *rebased;
                compactionStart.reset();
            }
        } else {
            list = list.compacted();
            compactionStart.reset();
        }
        const AddressList fresh(model);
        QCOMPARE(list.size(), fresh.size());
        if (step % 10 == 0 || step > 2950) {
            QCOMPARE(described(list), described(fresh));
            for (int i = 0; i < 64; ++i) {
                const std::string a = "10." + std::to_string(pick(2)) + "." + std::to_string(pick(4)) + "." + std::to_string(pick(8));
                for (Millis t : {Millis(0), Millis(150), Millis(400)}) {
                    const ListEntry* x = list.match(ip(a), t);
                    const ListEntry* y = fresh.match(ip(a), t);
                    QCOMPARE(x ? qs(x->reason) : QString(), y ? qs(y->reason) : QString());
                }
            }
            for (Millis t : {Millis(0), Millis(150), Millis(400)})
                QCOMPARE(list.activeCount(t), fresh.activeCount(t));
        }
    }
}

QTEST_APPLESS_MAIN(TestAddressList)
#include "test_address_list.moc"
