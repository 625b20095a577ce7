// SPDX-License-Identifier: GPL-3.0-or-later
// The default rules of a new database, through the real listener on
// 127.0.0.1 with the real clock: an ordinary visitor loading a page (a
// document, its fonts, images and scripts), reloading it and downloading a
// file in parts is never refused; a flood of documents still is.
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

// moc cannot parse C++20 standard headers; it only needs the test class.
#ifndef Q_MOC_RUN
#include "TrafficStack.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>
#endif

using namespace FloodgateTest;

namespace {

// What a browser fetches for one page: the document, then what it links.
const std::vector<std::string> PAGE = {
    "/",
    "/fonts/inter-regular.woff", "/fonts/inter-bold.woff2", "/fonts/Roboto.ttf",
    "/fonts/icons.otf", "/fonts/legacy.eot", "/fonts/Serif.WOFF",
    "/img/logo.png", "/img/Hero.JPEG", "/img/photo.webp", "/img/icon.svg",
    "/js/app.js", "/js/module.mjs",
};

std::string rangeHeader(int part)
{
    const long from = long(part) * 1048576;
    return "Range: bytes=" + std::to_string(from) + "-" + std::to_string(from + 1048575) + "\r\n";
}

} // namespace

class TestPageLoad : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

private Q_SLOTS:
    void anOrdinaryVisitorIsNeverRefused()
    {
        TrafficStack s(m_dir.filePath(QStringLiteral("visitor.db")).toStdString());
        const char* visitor = "127.0.0.21";
        // The page, and a reload right away (within the same 3 s as a
        // reload 2 s later would be: the same counts, no sleeping).
        for (int load = 0; load < 2; ++load)
            for (const std::string& path : PAGE)
                QVERIFY2(s.request(visitor, path) == 200, (path + " on load " + std::to_string(load + 1)).c_str());
        // Then a file in 20 parts, as a download manager or a resumed download asks for it.
        for (int part = 0; part < 20; ++part)
            QVERIFY2(s.request(visitor, "/files/setup.exe", rangeHeader(part)) == 200, ("part " + std::to_string(part)).c_str());
        const auto detail = s.engine->client(*Floodgate::Core::IpAddress::parse(visitor), s.clock.now());
        QVERIFY(detail);
        // The live view saw the two documents and the 20 parts (static files are not tracked at all).
        QCOMPARE(detail->summary.last60s, std::uint32_t(2 + 20));
    }

    void aFloodOfDocumentsIsStillRefusedAfterSix()
    {
        TrafficStack s(m_dir.filePath(QStringLiteral("flood.db")).toStdString());
        const char* flooder = "127.0.0.22";
        QElapsedTimer timer;
        timer.start();
        std::vector<int> statuses;
        for (int i = 0; i < 20; ++i) {  // 20 a second
            std::this_thread::sleep_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(50));
            statuses.push_back(s.request(flooder, "/article/" + std::to_string(i)));
        }
        QVERIFY(timer.elapsed() < 3000);  // all inside one 3 s window
        const std::vector<int> expected = {200, 200, 200, 200, 200, 200, 429, 429, 429, 429,
                                           429, 429, 429, 429, 429, 429, 429, 429, 429, 429};
        QCOMPARE(statuses, expected);
        // The same flood with Range headers on one path is refused too: each
        // part past the resource's bound is counted, and parts of new paths
        // are counted from the first.
        const char* rangeFlooder = "127.0.0.23";
        int refused = 0;
        for (int i = 0; i < 20; ++i)
            refused += s.request(rangeFlooder, "/article/" + std::to_string(i), rangeHeader(0)) == 429;
        QCOMPARE(refused, 14);
    }
};

QTEST_GUILESS_MAIN(TestPageLoad)
#include "test_page_load.moc"
