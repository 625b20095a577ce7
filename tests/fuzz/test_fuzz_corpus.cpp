// SPDX-License-Identifier: GPL-3.0-or-later
// Every fuzz target's corpus replayed as a regression suite in the normal
// build: each file in tests/fuzz/corpus/<target>/ (the hand-written seeds and
// every input that once crashed, named regression-*) goes through the same
// entry point and the same properties (FUZZ_CHECK) as under libFuzzer. A
// broken property aborts the suite. Under scripts/test-sanitizers the same
// inputs run with ASan + UBSan, which is how a crash found by fuzzing stays
// caught once it is fixed.
#include <QDir>
#include <QtTest>

#ifndef Q_MOC_RUN
#include <cstdint>
#include <map>
#endif

using Entry = int (*)(const std::uint8_t*, std::size_t);

// Each target's LLVMFuzzerTestOneInput, renamed at compile time (CMakeLists.txt).
extern "C" int fuzz_address_entry(const std::uint8_t*, std::size_t);
extern "C" int fuzz_json_entry(const std::uint8_t*, std::size_t);
extern "C" int fuzz_listfile_entry(const std::uint8_t*, std::size_t);
extern "C" int fuzz_forwarded_entry(const std::uint8_t*, std::size_t);
extern "C" int fuzz_request_entry(const std::uint8_t*, std::size_t);
extern "C" int fuzz_listener_entry(const std::uint8_t*, std::size_t);

namespace {

const std::map<QString, Entry>& targets()
{
    static const std::map<QString, Entry> t{
        {QStringLiteral("fuzz_address"), fuzz_address_entry},     {QStringLiteral("fuzz_json"), fuzz_json_entry},
        {QStringLiteral("fuzz_listfile"), fuzz_listfile_entry},   {QStringLiteral("fuzz_forwarded"), fuzz_forwarded_entry},
        {QStringLiteral("fuzz_request"), fuzz_request_entry},     {QStringLiteral("fuzz_listener"), fuzz_listener_entry},
    };
    return t;
}

} // namespace

class TestFuzzCorpus : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everyCorpusFileKeepsItsProperties_data()
    {
        QTest::addColumn<QString>("target");
        QTest::addColumn<QString>("path");
        for (const auto& [name, entry] : targets()) {
            const QDir dir(QStringLiteral(FLOODGATE_FUZZ_CORPUS "/") + name);
            const QStringList files = dir.entryList(QDir::Files, QDir::Name);
            QVERIFY2(!files.isEmpty(), qPrintable(QStringLiteral("no corpus for ") + name));
            for (const QString& f : files)
                QTest::newRow(qPrintable(name + QLatin1Char('/') + f)) << name << dir.filePath(f);
        }
    }
    void everyCorpusFileKeepsItsProperties()
    {
        QFETCH(QString, target);
        QFETCH(QString, path);
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        QCOMPARE(targets().at(target)(reinterpret_cast<const std::uint8_t*>(bytes.constData()), std::size_t(bytes.size())), 0);
    }
};

QTEST_GUILESS_MAIN(TestFuzzCorpus)
#include "test_fuzz_corpus.moc"
