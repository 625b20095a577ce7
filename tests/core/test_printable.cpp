// SPDX-License-Identifier: GPL-3.0-or-later
// Core::printable, the one escaper for text from outside on its way to
// stderr, a terminal or limiter.log: each class of byte a terminal obeys
// becomes a visible escape, valid printable UTF-8 is kept as it is.
#include <QtTest>

#include "core/Printable.h"

#include <string>

using namespace Floodgate::Core;

class TestPrintable : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void escapes_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QByteArray>("shown");
        // Kept.
        QTest::newRow("empty") << QByteArray() << QByteArray();
        QTest::newRow("printable ascii") << QByteArray("Mozilla/5.0 (X11; Linux) ~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./")
                                         << QByteArray("Mozilla/5.0 (X11; Linux) ~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./");
        QTest::newRow("two-byte utf-8") << QByteArray("caf\xc3\xa9 \xc2\xa0 \xc2\xa9") << QByteArray("caf\xc3\xa9 \xc2\xa0 \xc2\xa9");
        QTest::newRow("three-byte utf-8") << QByteArray("\xe2\x82\xac \xe4\xb8\xad \xe2\x80\x8f") << QByteArray("\xe2\x82\xac \xe4\xb8\xad \xe2\x80\x8f");
        QTest::newRow("four-byte utf-8") << QByteArray("\xf0\x9f\x98\x80") << QByteArray("\xf0\x9f\x98\x80");
        QTest::newRow("right-to-left text") << QByteArray("\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d") << QByteArray("\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d");
        QTest::newRow("neighbours of the bidi controls") << QByteArray("\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa")
                                                         << QByteArray("\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa");
        // C0 controls and DEL.
        QTest::newRow("line feed") << QByteArray("a\nfloodgate: SIGHUP: forged") << QByteArray("a\\nfloodgate: SIGHUP: forged");
        QTest::newRow("carriage return") << QByteArray("a\rb") << QByteArray("a\\rb");
        QTest::newRow("tab") << QByteArray("a\tb") << QByteArray("a\\tb");
        QTest::newRow("nul") << QByteArray("a\0b", 3) << QByteArray("a\\x00b");
        QTest::newRow("title") << QByteArray("\x1b]0;pwned\x07") << QByteArray("\\x1B]0;pwned\\x07");
        QTest::newRow("clear") << QByteArray("\x1b[2J") << QByteArray("\\x1B[2J");
        QTest::newRow("other C0") << QByteArray("\x01\x08\x0b\x0c\x1f") << QByteArray("\\x01\\x08\\x0B\\x0C\\x1F");
        QTest::newRow("DEL") << QByteArray("a\x7f") << QByteArray("a\\x7F");
        // C1 controls as characters (U+0080-009F).
        QTest::newRow("C1 CSI") << QByteArray("\xc2\x9b" "2J") << QByteArray("\\u{9B}2J");
        QTest::newRow("C1 first and last") << QByteArray("\xc2\x80\xc2\x9f") << QByteArray("\\u{80}\\u{9F}");
        // Bytes that start no valid character.
        QTest::newRow("C1 as a lone byte") << QByteArray("\x9b" "2J") << QByteArray("\\x9B2J");
        QTest::newRow("stray continuation") << QByteArray("a\x80z") << QByteArray("a\\x80z");
        QTest::newRow("ff") << QByteArray("\xff\xfe") << QByteArray("\\xFF\\xFE");
        QTest::newRow("cut short") << QByteArray("a\xe2\x82") << QByteArray("a\\xE2\\x82");
        QTest::newRow("lead then ascii") << QByteArray("\xc3(") << QByteArray("\\xC3(");
        QTest::newRow("overlong slash") << QByteArray("\xc0\xaf") << QByteArray("\\xC0\\xAF");
        QTest::newRow("overlong C1") << QByteArray("\xe0\x82\x9b") << QByteArray("\\xE0\\x82\\x9B");
        QTest::newRow("surrogate") << QByteArray("\xed\xa0\x80") << QByteArray("\\xED\\xA0\\x80");
        QTest::newRow("beyond U+10FFFF") << QByteArray("\xf4\x90\x80\x80") << QByteArray("\\xF4\\x90\\x80\\x80");
        // Bidi controls (Trojan Source) and the line and paragraph separators.
        QTest::newRow("LRE RLE PDF LRO RLO") << QByteArray("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad\xe2\x80\xae")
                                             << QByteArray("\\u{202A}\\u{202B}\\u{202C}\\u{202D}\\u{202E}");
        QTest::newRow("LRI RLI FSI PDI") << QByteArray("\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9")
                                         << QByteArray("\\u{2066}\\u{2067}\\u{2068}\\u{2069}");
        QTest::newRow("RLO inside text") << QByteArray("user\xe2\x80\xaegpj.exe") << QByteArray("user\\u{202E}gpj.exe");
        QTest::newRow("line separator") << QByteArray("a\xe2\x80\xa8" "b") << QByteArray("a\\u{2028}b");
        QTest::newRow("mixed") << QByteArray("\xc3\xa9\n\xff\xe2\x80\xae\x1b") << QByteArray("\xc3\xa9\\n\\xFF\\u{202E}\\x1B");
    }
    void escapes()
    {
        QFETCH(QByteArray, text);
        QFETCH(QByteArray, shown);
        const std::string in(text.constData(), std::size_t(text.size()));
        const std::string out = printable(in);
        QCOMPARE(QByteArray(out.data(), qsizetype(out.size())), shown);
        // appendPrintable adds the same after what is there.
        std::string appended = "x";
        appendPrintable(appended, in);
        QCOMPARE(appended, "x" + out);
        // What comes out has no byte below 0x20, no DEL and no invalid UTF-8.
        for (const char c : out)
            QVERIFY(static_cast<unsigned char>(c) >= 0x20 && c != 0x7F);
        QVERIFY(QString::fromUtf8(out.data(), qsizetype(out.size())).toUtf8() == QByteArray(out.data(), qsizetype(out.size())));
    }

    // Every single byte and every pair: nothing raw below 0x20 or DEL ever
    // comes out, whatever follows.
    void noControlByteSurvives()
    {
        for (int a = 0; a < 256; ++a) {
            for (int b = 0; b < 256; ++b) {
                const char in[2] = {char(a), char(b)};
                const std::string out = printable(std::string_view(in, 2));
                for (const char c : out)
                    QVERIFY2(static_cast<unsigned char>(c) >= 0x20 && c != 0x7F, qPrintable(QStringLiteral("%1 %2").arg(a).arg(b)));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestPrintable)
#include "test_printable.moc"
