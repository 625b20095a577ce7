// SPDX-License-Identifier: GPL-3.0-or-later
// UTF-8 for request bytes: which sequences are characters (RFC 3629), and
// where a field is cut so that no character is split: the limiter log's
// records (copyTruncated) and the engine's short names (ShortName).
#include <QtTest>

#include "core/Decision.h"
#include "core/Utf8.h"

#include <string>

using namespace Floodgate::Core;

class TestUtf8 : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void sequenceLength_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<int>("length");
        QTest::newRow("ascii") << QByteArray("a") << 1;
        QTest::newRow("two bytes") << QByteArray("\xc3\xa9") << 2;
        QTest::newRow("three bytes") << QByteArray("\xe2\x82\xac") << 3;
        QTest::newRow("four bytes") << QByteArray("\xf0\x9f\x98\x80") << 4;
        QTest::newRow("empty") << QByteArray() << 0;
        QTest::newRow("stray continuation") << QByteArray("\x80") << 0;
        QTest::newRow("lead then ascii") << QByteArray("\xc3(") << 0;
        QTest::newRow("cut short") << QByteArray("\xe2\x82") << 0;
        QTest::newRow("overlong two") << QByteArray("\xc0\xaf") << 0;
        QTest::newRow("overlong three") << QByteArray("\xe0\x80\xaf") << 0;
        QTest::newRow("surrogate") << QByteArray("\xed\xa0\x80") << 0;
        QTest::newRow("beyond U+10FFFF") << QByteArray("\xf4\x90\x80\x80") << 0;
        QTest::newRow("ff") << QByteArray("\xff") << 0;
    }
    void sequenceLength()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(int, length);
        QCOMPARE(int(utf8SequenceLength(std::string_view(bytes.constData(), std::size_t(bytes.size())))), length);
    }

    void cutNeverSplitsACharacter_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<int>("max");
        QTest::addColumn<int>("kept");
        QTest::newRow("fits") << QByteArray("abc") << 5 << 3;
        QTest::newRow("ascii cut") << QByteArray("abcdef") << 4 << 4;
        QTest::newRow("before a two-byte character") << QByteArray("abc\xc3\xa9") << 3 << 3;
        QTest::newRow("inside a two-byte character") << QByteArray("abc\xc3\xa9z") << 4 << 3;
        QTest::newRow("after a two-byte character") << QByteArray("abc\xc3\xa9z") << 5 << 5;
        QTest::newRow("inside a four-byte character, 1") << QByteArray("a\xf0\x9f\x98\x80") << 2 << 1;
        QTest::newRow("inside a four-byte character, 3") << QByteArray("a\xf0\x9f\x98\x80z") << 4 << 1;
        QTest::newRow("invalid bytes are cut as bytes") << QByteArray("ab\x80\x80\x80\x80\x80") << 4 << 4;
    }
    void cutNeverSplitsACharacter()
    {
        QFETCH(QByteArray, text);
        QFETCH(int, max);
        QFETCH(int, kept);
        QCOMPARE(int(utf8Cut(std::string_view(text.constData(), std::size_t(text.size())), std::size_t(max))), kept);
    }

    void shortNamesAreCutOnACharacterBoundary()
    {
        // A customer id from the request: 46 bytes, then a two-byte character
        // that would end at byte 48, past the 47 a name holds.
        const std::string id = std::string(46, 'c') + "\xc3\xa9" + "more";
        ShortName name;
        name.assign(id);
        QCOMPARE(int(name.length), 46);
        QCOMPARE(std::string(name.view()), std::string(46, 'c'));
        name.assign("caf\xc3\xa9");
        QCOMPARE(std::string(name.view()), std::string("caf\xc3\xa9"));
    }
};

QTEST_APPLESS_MAIN(TestUtf8)
#include "test_utf8.moc"
