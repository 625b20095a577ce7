// SPDX-License-Identifier: GPL-3.0-or-later
// The JSON the admin API reads and writes: strict parsing with a reason and
// an offset, a depth bound, exact integers, UTF-8 checked, compact output.
#include <QtTest>

#include "wire/Json.h"

#include <clocale>
#include <cstdio>

using namespace Floodgate::Core;
using namespace Floodgate::Wire;

class TestJson : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void roundTrip_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QByteArray>("dumped");
        QTest::newRow("object") << QByteArray(" { \"a\" : 1 , \"b\" : [true, false, null] } ")
                                << QByteArray("{\"a\":1,\"b\":[true,false,null]}");
        QTest::newRow("key order kept") << QByteArray("{\"z\":1,\"a\":2}") << QByteArray("{\"z\":1,\"a\":2}");
        QTest::newRow("empty containers") << QByteArray("{\"a\":{},\"b\":[]}") << QByteArray("{\"a\":{},\"b\":[]}");
        QTest::newRow("negative integer") << QByteArray("-42") << QByteArray("-42");
        QTest::newRow("int64 max") << QByteArray("9223372036854775807") << QByteArray("9223372036854775807");
        QTest::newRow("fraction") << QByteArray("0.5") << QByteArray("0.5");
        QTest::newRow("exponent") << QByteArray("1e3") << QByteArray("1000");
        QTest::newRow("whole fraction is an integer") << QByteArray("100.0") << QByteArray("100");
        QTest::newRow("minus zero") << QByteArray("-0") << QByteArray("0");
        QTest::newRow("beyond 64 bits") << QByteArray("99999999999999999999") << QByteArray("1e+20");
        QTest::newRow("beyond the double range") << QByteArray("[1e400,-1e400]") << QByteArray("[1e999,-1e999]");
        QTest::newRow("below the smallest double") << QByteArray("1e-400") << QByteArray("0");
        QTest::newRow("escapes") << QByteArray("\"a\\\"b\\\\c\\/d\\n\\t\"") << QByteArray("\"a\\\"b\\\\c/d\\n\\t\"");
        QTest::newRow("unicode escape") << QByteArray("\"\\u00e9\"") << QByteArray("\"\xc3\xa9\"");
        QTest::newRow("surrogate pair") << QByteArray("\"\\ud83d\\ude00\"") << QByteArray("\"\xf0\x9f\x98\x80\"");
        QTest::newRow("raw utf-8") << QByteArray("\"caf\xc3\xa9\"") << QByteArray("\"caf\xc3\xa9\"");
        QTest::newRow("control char escaped on output") << QByteArray("\"\\u0001\"") << QByteArray("\"\\u0001\"");
    }
    void roundTrip()
    {
        QFETCH(QByteArray, text);
        QFETCH(QByteArray, dumped);
        std::string error;
        const auto v = Json::parse(text.toStdString(), &error);
        QVERIFY2(v.has_value(), error.c_str());
        QCOMPARE(QByteArray::fromStdString(v->dump()), dumped);
        // What we write, we read back to the same value.
        const auto again = Json::parse(v->dump());
        QVERIFY(again.has_value());
        QVERIFY(*again == *v);
    }

    void rejects_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("error");
        QTest::newRow("empty") << QByteArray("") << QStringLiteral("malformed JSON: unexpected end of input at offset 0");
        QTest::newRow("trailing comma") << QByteArray("{\"a\":1,}") << QStringLiteral("malformed JSON: expected a string key at offset 7");
        QTest::newRow("missing colon") << QByteArray("{\"a\" 1}") << QStringLiteral("malformed JSON: expected ':' at offset 5");
        QTest::newRow("single quotes") << QByteArray("{'a':1}") << QStringLiteral("malformed JSON: expected a string key at offset 1");
        QTest::newRow("trailing text") << QByteArray("{} x") << QStringLiteral("malformed JSON: unexpected text after the JSON value at offset 3");
        QTest::newRow("leading zero") << QByteArray("01") << QStringLiteral("malformed JSON: unexpected text after the JSON value at offset 1");
        QTest::newRow("bare minus") << QByteArray("-") << QStringLiteral("malformed JSON: invalid number at offset 1");
        QTest::newRow("dot without digits") << QByteArray("1.") << QStringLiteral("malformed JSON: invalid number at offset 2");
        QTest::newRow("unterminated") << QByteArray("\"abc") << QStringLiteral("malformed JSON: unterminated string at offset 4");
        QTest::newRow("raw newline") << QByteArray("\"a\nb\"") << QStringLiteral("malformed JSON: control character in a string at offset 2");
        QTest::newRow("bad escape") << QByteArray("\"\\x\"") << QStringLiteral("malformed JSON: invalid escape at offset 2");
        QTest::newRow("lone surrogate") << QByteArray("\"\\ud800\"") << QStringLiteral("malformed JSON: unpaired surrogate in \\u escape at offset 7");
        QTest::newRow("bad utf-8") << QByteArray("\"\xc3(\"") << QStringLiteral("malformed JSON: invalid UTF-8 at offset 1");
        QTest::newRow("overlong utf-8") << QByteArray("\"\xe0\x80\xaf\"") << QStringLiteral("malformed JSON: invalid UTF-8 at offset 1");
        QTest::newRow("truncated utf-8") << QByteArray("\"\xe2\x82") << QStringLiteral("malformed JSON: invalid UTF-8 at offset 1");
        QTest::newRow("duplicate key") << QByteArray("{\"a\":1,\"a\":2}") << QStringLiteral("malformed JSON: duplicate key \"a\" at offset 12");
        QTest::newRow("bad literal") << QByteArray("nul") << QStringLiteral("malformed JSON: invalid literal at offset 0");
    }
    void rejects()
    {
        QFETCH(QByteArray, text);
        QFETCH(QString, error);
        std::string why;
        QVERIFY(!Json::parse(text.toStdString(), &why).has_value());
        QCOMPARE(QString::fromStdString(why), error);
    }

    void depthIsBounded()
    {
        Json::Limits ten;
        ten.maxDepth = 10;
        const std::string deep = std::string(10, '[') + std::string(10, ']');
        QVERIFY(Json::parse(deep, nullptr, ten).has_value());
        std::string why;
        QVERIFY(!Json::parse(std::string(11, '[') + std::string(11, ']'), &why, ten).has_value());
        QCOMPARE(QString::fromStdString(why), QStringLiteral("nested deeper than 10 levels (the limit) at offset 10"));
        // A hostile body of a million brackets fails fast instead of overflowing the stack.
        QVERIFY(!Json::parse(std::string(1'000'000, '['), &why).has_value());
        QCOMPARE(QString::fromStdString(why), QStringLiteral("nested deeper than 64 levels (the limit) at offset 64"));
    }

    void keysAndValuesAreBounded()
    {
        auto object = [](std::size_t keys, const char* last = nullptr) {
            std::string text = "{";
            for (std::size_t i = 0; i < keys; ++i)
                text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
            if (last)
                text += std::string(",\"") + last + "\":0";
            return text + "}";
        };
        Json::Limits limits;
        limits.maxKeysPerObject = 100'000;
        limits.maxValues = 1'000'000;
        // Many keys: the duplicate check is linear (it was quadratic: 80,000
        // keys took seconds), whatever the order of the keys.
        const auto many = Json::parse(object(80'000), nullptr, limits);
        QVERIFY(many.has_value());
        QCOMPARE(many->asObject().size(), std::size_t(80'000));
        std::string why;
        QVERIFY(!Json::parse(object(80'000, "k0"), &why, limits).has_value());
        QVERIFY2(why.rfind("malformed JSON: duplicate key \"k0\" at offset ", 0) == 0, why.c_str());

        // The default bounds, named in the error.
        QVERIFY(Json::parse(object(Tuning::jsonMaxKeysPerObject)).has_value());
        QVERIFY(!Json::parse(object(Tuning::jsonMaxKeysPerObject + 1), &why).has_value());
        QVERIFY2(why.rfind("more than 1000 keys in one object (the limit) at offset ", 0) == 0, why.c_str());
        std::string values = "[0";
        for (std::size_t i = 2; i < Tuning::jsonMaxValues; ++i)
            values += ",0";
        QVERIFY(Json::parse(values + "]").has_value());  // with the array itself: at the bound
        QVERIFY(!Json::parse(values + ",0]", &why).has_value());
        QVERIFY2(why.rfind("more than 250000 values (the limit) at offset ", 0) == 0, why.c_str());
    }

    void invalidUtf8IsWrittenAsReplacementCharacters_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QByteArray>("written");
        QTest::newRow("valid passes") << QByteArray("caf\xc3\xa9") << QByteArray("\"caf\xc3\xa9\"");
        QTest::newRow("lone ff") << QByteArray("a\xff" "b") << QByteArray("\"a\xef\xbf\xbd" "b\"");
        QTest::newRow("lead then ascii") << QByteArray("\xc3(") << QByteArray("\"\xef\xbf\xbd(\"");
        QTest::newRow("cut at the end") << QByteArray("x\xe2\x82") << QByteArray("\"x\xef\xbf\xbd\xef\xbf\xbd\"");
        QTest::newRow("overlong slash") << QByteArray("\xc0\xaf") << QByteArray("\"\xef\xbf\xbd\xef\xbf\xbd\"");
        QTest::newRow("surrogate") << QByteArray("\xed\xa0\x80") << QByteArray("\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    }
    void invalidUtf8IsWrittenAsReplacementCharacters()
    {
        // Request bytes (a user agent) copied into the events API: what is
        // written is always valid JSON, so it parses back.
        QFETCH(QByteArray, bytes);
        QFETCH(QByteArray, written);
        std::string out;
        appendJsonString(out, std::string_view(bytes.constData(), std::size_t(bytes.size())));
        QCOMPARE(QByteArray::fromStdString(out), written);
        QVERIFY(Json::parse(out).has_value());
    }

    void numbersKeepTheirRange()
    {
        // Unsigned values above INT64_MAX do not wrap to negative numbers.
        const Json big(std::uint64_t(UINT64_MAX));
        QVERIFY(big.asNumber() > 1.8e19);
        QCOMPARE(QString::fromStdString(big.dump()), QStringLiteral("18446744073709551616"));  // 2^64, the nearest double
        QCOMPARE(QString::fromStdString(Json(std::uint64_t(INT64_MAX)).dump()), QStringLiteral("9223372036854775807"));
        // Out of 64 bits, asInteger saturates instead of being undefined.
        const auto huge = Json::parse("[1e400,-1e400,99999999999999999999]");
        QVERIFY(huge);
        QCOMPARE(huge->asArray()[0].asInteger(), std::int64_t(INT64_MAX));
        QCOMPARE(huge->asArray()[1].asInteger(), std::int64_t(INT64_MIN));
        QCOMPARE(huge->asArray()[2].asInteger(), std::int64_t(INT64_MAX));
        QVERIFY(!huge->asArray()[2].isInteger());
    }

    void numbersIgnoreTheCLibraryLocale()
    {
        // The console's Qt sets the user's locale; under de_DE the C
        // library writes and reads 0,5. JSON is for machines: 0.5 always.
        if (!std::setlocale(LC_ALL, "de_DE.UTF-8"))
            QSKIP("the de_DE.UTF-8 locale is not installed (scripts/setup generates it)");
        char probe[16];
        std::snprintf(probe, sizeof probe, "%.1f", 0.5);
        const std::string cLibrary = probe;
        Json o = Json::object();
        o.set("half", 0.5);
        o.set("rate", 1234.25);
        o.set("big", std::int64_t(1234567));
        const std::string text = o.dump();
        const auto back = Json::parse("{\"x\":0.25}");
        std::setlocale(LC_ALL, "C");
        QCOMPARE(QString::fromStdString(cLibrary), QStringLiteral("0,5"));  // the locale is really in force
        QCOMPARE(QString::fromStdString(text), QStringLiteral("{\"half\":0.5,\"rate\":1234.25,\"big\":1234567}"));
        QVERIFY(back);
        QCOMPARE(back->find("x")->asNumber(), 0.25);
    }

    void accessors()
    {
        const auto v = Json::parse("{\"n\":3,\"d\":2.5,\"s\":\"x\",\"a\":[1],\"o\":{\"k\":null}}");
        QVERIFY(v);
        QVERIFY(v->find("n")->isInteger());
        QCOMPARE(v->find("n")->asInteger(), std::int64_t(3));
        QVERIFY(v->find("d")->isNumber());
        QVERIFY(!v->find("d")->isInteger());
        QCOMPARE(v->find("d")->asNumber(), 2.5);
        QCOMPARE(QString::fromStdString(v->find("s")->asString()), QStringLiteral("x"));
        QCOMPARE(v->find("a")->asArray().size(), std::size_t(1));
        QVERIFY(v->find("o")->find("k")->isNull());
        QVERIFY(v->find("missing") == nullptr);
        QCOMPARE(QString::fromLatin1(v->find("a")->typeName()), QStringLiteral("an array"));

        Json built = Json::object();
        built.set("b", 1);
        built.set("a", "two");
        built.set("b", Json::array()).push(true);
        QCOMPARE(QString::fromStdString(built.dump()), QStringLiteral("{\"b\":[true],\"a\":\"two\"}"));
    }
};

QTEST_APPLESS_MAIN(TestJson)
#include "test_json.moc"
