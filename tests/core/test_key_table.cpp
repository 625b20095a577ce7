// SPDX-License-Identifier: GPL-3.0-or-later
// The key table (KeyTable.h) against a model of what it must hold: random
// requests from a pool of keys larger than the capacity, so keys are found,
// made, evicted least recently used first and made again, and the index
// (linear probing, positions carrying hash bits and the distance from home,
// removal by backward shift) fills, grows and empties; then every key gets
// an expiry of its own and purge() must remove exactly the expired ones.
// After each batch of steps every key of the pool is looked up: present if
// and only if the model holds it, with the cells it was given.
#include <QtTest>

#include "core/KeyTable.h"

#include <cstdint>
#include <list>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

using namespace Floodgate::Core;

class TestKeyTable : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void randomRequestsAgainstAnLruModel_data();
    void randomRequestsAgainstAnLruModel();
};

namespace {

constexpr std::uint16_t STRIDE = 2;
constexpr std::uint32_t SIG = 11;
constexpr std::uint32_t SIG_EXPIRY = 12;
constexpr Millis T0 = 1'789'999'200'000;
constexpr Millis KEEP_MS = 365LL * 24 * 3600 * 1000;  // nothing expires in the first part

// Keys that differ in every field the table compares, some only in one.
TableKey keyOf(std::uint32_t id)
{
    return TableKey{0x20010db8ull << 32 | (id % 7), 0x0a000000ull + id, id % 3, 1 + id % 2, 0};
}

// The ids the table holds: each key's cells carry its id (twice).
class Model {
public:
    explicit Model(std::size_t capacity) : m_capacity(capacity) {}

    // A request for `id`: touched, or made (evicting the least recently used at capacity).
    void request(std::uint32_t id)
    {
        if (auto it = m_where.find(id); it != m_where.end()) {
            m_lru.splice(m_lru.begin(), m_lru, it->second);
            return;
        }
        if (m_where.size() >= m_capacity) {
            m_where.erase(m_lru.back());
            m_lru.pop_back();
        }
        m_lru.push_front(id);
        m_where[id] = m_lru.begin();
    }
    bool holds(std::uint32_t id) const { return m_where.count(id) != 0; }
    void erase(std::uint32_t id)
    {
        m_lru.erase(m_where.at(id));
        m_where.erase(id);
    }
    std::size_t size() const { return m_where.size(); }
    std::vector<std::uint32_t> ids() const { return {m_lru.begin(), m_lru.end()}; }

private:
    std::size_t m_capacity;
    std::list<std::uint32_t> m_lru;
    std::unordered_map<std::uint32_t, std::list<std::uint32_t>::iterator> m_where;
};

// Every id of the pool: in the table exactly when in the model, with its cells.
QString mismatch(const KeyTable& t, const Model& m, std::uint32_t pool, Millis now)
{
    for (std::uint32_t id = 0; id < pool; ++id) {
        std::uint32_t seen = UINT32_MAX;
        const bool found = t.read(keyOf(id), now, [&](const KeyTable::Header& h, const std::uint32_t* cells) {
            seen = h.holds(keyOf(id)) && cells[0] == id && cells[1] == ~id ? id : UINT32_MAX - 1;
        });
        if (found != m.holds(id))
            return QStringLiteral("key %1: %2 in the table, %3 in the model").arg(id).arg(found).arg(m.holds(id));
        if (found && seen != id)
            return QStringLiteral("key %1 has another key's cells or header").arg(id);
    }
    if (t.size() != m.size())
        return QStringLiteral("the table counts %1 keys, the model %2").arg(t.size()).arg(m.size());
    return {};
}

} // namespace

void TestKeyTable::randomRequestsAgainstAnLruModel_data()
{
    QTest::addColumn<int>("capacity");
    QTest::addColumn<int>("pool");
    QTest::addColumn<unsigned>("seed");
    // Small tables keep one shard, so the LRU order is exact and the model's.
    QTest::newRow("300 of 1,000") << 300 << 1000 << 1u;
    QTest::newRow("4,000 of 5,000") << 4000 << 5000 << 2u;
    QTest::newRow("7 of 40") << 7 << 40 << 3u;
}

void TestKeyTable::randomRequestsAgainstAnLruModel()
{
    QFETCH(int, capacity);
    QFETCH(int, pool);
    QFETCH(unsigned, seed);
    KeyTable t(std::size_t(capacity), STRIDE, 64);
    QCOMPARE(t.shardCount(), std::size_t(1));
    Model model{std::size_t(capacity)};
    std::mt19937 rng(seed);
    // A skewed pool: a third of the requests from a tenth of the keys.
    std::uniform_int_distribution<std::uint32_t> any(0, std::uint32_t(pool) - 1);
    std::uniform_int_distribution<std::uint32_t> hot(0, std::uint32_t(pool) / 10);
    Millis now = T0;
    for (int step = 1; step <= 40'000; ++step) {
        const std::uint32_t id = step % 3 == 0 ? hot(rng) : any(rng);
        now += 1;
        t.with(keyOf(id), SIG, now, KEEP_MS, [&](KeyTable::Header& h, std::uint32_t* cells, bool created) {
            QVERIFY(h.holds(keyOf(id)));
            if (created) {
                QVERIFY(!model.holds(id));
                cells[0] = id;
                cells[1] = ~id;
            } else {
                QVERIFY(model.holds(id));
                QCOMPARE(cells[0], id);
            }
        });
        model.request(id);
        if (step % 2'000 == 0) {
            const QString wrong = mismatch(t, model, std::uint32_t(pool), now);
            QVERIFY2(wrong.isEmpty(), qPrintable(QStringLiteral("after step %1: %2").arg(step).arg(wrong)));
        }
    }
    QVERIFY(t.evictions() > 0);

    // Expiry: every key held gets its own (a new signature sets it to
    // exactly now + keep); purge() at one time removes exactly those due.
    std::uniform_int_distribution<Millis> keep(1, 1000);
    std::unordered_map<std::uint32_t, Millis> expiry;
    const Millis at = now + 1;
    for (const std::uint32_t id : model.ids()) {
        const Millis k = keep(rng);
        t.with(keyOf(id), SIG_EXPIRY, at, k, [&](KeyTable::Header&, std::uint32_t* cells, bool created) {
            QVERIFY(!created);
            cells[0] = id;  // the new signature zeroed the cells
            cells[1] = ~id;
        });
        expiry[id] = at + k;
    }
    const Millis purgeAt = at + 500;
    std::size_t due = 0;
    for (const auto& [id, e] : expiry)
        if (e <= purgeAt) {
            model.erase(id);
            ++due;
        }
    QCOMPARE(t.purge(purgeAt), due);
    const QString wrong = mismatch(t, model, std::uint32_t(pool), purgeAt);
    QVERIFY2(wrong.isEmpty(), qPrintable(QStringLiteral("after purge: %1").arg(wrong)));
    QCOMPARE(t.expirations(), std::uint64_t(due));
}

QTEST_APPLESS_MAIN(TestKeyTable)
#include "test_key_table.moc"
