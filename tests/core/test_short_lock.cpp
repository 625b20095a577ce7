// SPDX-License-Identifier: GPL-3.0-or-later
// ShortLock (the shards' mutex): one holder at a time, through both its
// paths (a short spin, then a sleep), and every sleeper woken when it is let go.
#include <QtTest>

#include "core/ShortLock.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

using namespace Floodgate::Core;

class TestShortLock : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void oneHolderAtATime();
    void sleepersAreWoken();
    void tryLock();
};

void TestShortLock::oneHolderAtATime()
{
    // More threads than this machine's cores, so a holder is sometimes
    // preempted and the others go past the spin to sleep.
    constexpr int THREADS = 6;
    constexpr int ROUNDS = 100'000;
    ShortLock lock;
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
    long long counter = 0;  // plain: only the lock orders its updates
    std::vector<std::thread> threads;
    for (int t = 0; t < THREADS; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < ROUNDS; ++i) {
                std::lock_guard guard(lock);
                if (inside.fetch_add(1, std::memory_order_relaxed) != 0)
                    overlaps.fetch_add(1, std::memory_order_relaxed);
                ++counter;
                inside.fetch_sub(1, std::memory_order_relaxed);
            }
        });
    for (std::thread& t : threads)
        t.join();
    QCOMPARE(overlaps.load(), 0);
    QCOMPARE(counter, (long long)THREADS * ROUNDS);
}

void TestShortLock::sleepersAreWoken()
{
    // The holder keeps the lock far longer than the spin (tens of
    // milliseconds against microseconds), so the others sleep on it; each
    // must get it once it is let go.
    constexpr int WAITERS = 3;
    ShortLock lock;
    std::atomic<int> started{0};
    std::atomic<int> done{0};
    lock.lock();
    std::vector<std::thread> threads;
    for (int t = 0; t < WAITERS; ++t)
        threads.emplace_back([&] {
            started.fetch_add(1);
            std::lock_guard guard(lock);
            done.fetch_add(1);
        });
    while (started.load() < WAITERS)
        std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    QCOMPARE(done.load(), 0);
    lock.unlock();
    for (std::thread& t : threads)
        t.join();
    QCOMPARE(done.load(), WAITERS);
}

void TestShortLock::tryLock()
{
    ShortLock lock;
    QVERIFY(lock.try_lock());
    bool other = true;
    std::thread([&] { other = lock.try_lock(); }).join();
    QVERIFY(!other);
    lock.unlock();
    std::thread([&] { other = lock.try_lock(); }).join();
    QVERIFY(other);
    lock.unlock();
}

QTEST_APPLESS_MAIN(TestShortLock)
#include "test_short_lock.moc"
