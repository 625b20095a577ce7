// SPDX-License-Identifier: GPL-3.0-or-later
// "Try on a log…", offscreen: logs generated with known answers (a steady
// crawler only the edited rules refuse, a burst only the rules in force
// refuse, a flood both refuse a different number of times) give the
// dialog's exact sentence, rule counts and rows; the Rules view's button
// replays the form as edited against the rules as stored; a 1,000,000-line
// replay runs off the GUI thread (a QTimer keeps ticking) and Cancel stops
// it, as does closing the dialog; a missing file and a file that is not a
// log each get a clear error in the dialog.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ConsoleStack.h"
#include "ui/LevelsEditor.h"
#include "ui/RulesView.h"
#include "ui/TryLogDialog.h"

#include <QElapsedTimer>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>

#include <zlib.h>

#include <cstdio>
#endif

using namespace Floodgate;
using namespace FloodgateTest;

namespace {

// 2026-11-22T05:00:00Z, a minute boundary (fixed windows start on one).
constexpr std::int64_t Start = 1795323600;

// One combined-format line at Start + `second`.
std::string line(const char* client, int second, const std::string& path, const char* agent)
{
    const std::time_t t = std::time_t(Start + second);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char when[64];
    std::strftime(when, sizeof when, "%d/%b/%Y:%H:%M:%S +0000", &tm);
    return std::string(client) + " - - [" + when + "] \"GET " + path + " HTTP/1.1\" 200 512 \"-\" \"" + agent + "\"\n";
}

void writeFile(const QString& path, const std::string& text)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    QCOMPARE(f.write(text.data(), qint64(text.size())), qint64(text.size()));
}

void writeGzip(const QString& path, const std::string& text)
{
    gzFile f = gzopen(path.toLocal8Bit().constData(), "wb");
    QVERIFY(f);
    QCOMPARE(gzwrite(f, text.data(), unsigned(text.size())), int(text.size()));
    QCOMPARE(gzclose(f), Z_OK);
}

constexpr const char* Googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
constexpr const char* Curl = "curl/8.5.0";
constexpr const char* Browser = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

// Per-IP rules of one level each, a fixed window (its counts are exact to reason about).
Replay::Configuration perIp(std::uint32_t limit, Core::Millis period)
{
    Replay::Configuration c;
    c.config = Core::defaultConfig();
    Core::Level l;
    l.limit = limit;
    l.periodMs = period;
    l.algorithm = Core::Algorithm::FixedWindow;
    c.config.rules[0].levels = {l};
    return c;
}

QString text(const QTableWidget* t, int row, int column)
{
    const QTableWidgetItem* item = t->item(row, column);
    return item ? item->text() : QString();
}

} // namespace

class TryLogTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theDialogShowsBothSidesWithTheirExactNumbers()
    {
        QTemporaryDir dir;
        // The rules in force: 3 per second. The edited rules: 10 per minute.
        // access.log.1 (plain), then access.log.gz (the rotated set's newer part):
        std::string older, newer;
        for (int s = 0; s < 30; ++s) {  // a steady crawler, 1/s for 30 s: 20 over 10/min, never over 3/s
            older += line("192.0.2.10", s, "/page/" + std::to_string(s), Googlebot);
            for (int i = 0; s == 5 && i < 2; ++i)  // a person: 2 requests, refused by neither
                older += line("192.0.2.30", 5, i ? "/style.css" : "/", Browser);
        }
        for (int i = 0; i < 5; ++i)  // a burst of 5 in one second: 2 over 3/s, within 10/min
            older += line("192.0.2.20", 40, "/api/" + std::to_string(i), Curl);
        for (int i = 0; i < 12; ++i)  // a flood of 12 in one second: 9 over 3/s, 2 over 10/min
            newer += line("192.0.2.40", 50, "/search?q=" + std::to_string(i), Curl);
        const QString a = dir.filePath(QStringLiteral("access.log.1")), b = dir.filePath(QStringLiteral("access.log.gz"));
        writeFile(a, older);
        writeGzip(b, newer);

        Ui::TryLogDialog d(perIp(3, Core::SECOND), perIp(10, Core::MINUTE));
        d.show();
        QSignalSpy ended(&d, &Ui::TryLogDialog::replayEnded);
        d.setFiles({a, b});
        QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 10000);
        QVERIFY(!d.running());
        QVERIFY(d.problemLabel()->isHidden());

        QCOMPARE(d.summaryLabel()->text(),
                 QStringLiteral("The edited rules would refuse 22 requests from 2 clients; the rules in force refuse 11 from 2."));
        QCOMPARE(d.detailLabel()->text(),
                 QStringLiteral("49 requests from 4 clients in 2 logs, 2026-11-22 05:00:00 to 2026-11-22 05:00:50 UTC."));

        // By rule (by level: each level is named by its rule and period):
        // 11 refusals by the 1 s level in force, 22 by the 1 min level if applied.
        const QTableWidget* rules = d.rulesTable();
        QCOMPARE(rules->rowCount(), 2);
        QCOMPARE(text(rules, 0, 0), QStringLiteral("ip-1m"));
        QCOMPARE(text(rules, 0, 1), QStringLiteral("0"));
        QCOMPARE(text(rules, 0, 2), QStringLiteral("22"));
        QCOMPARE(text(rules, 0, 3), QStringLiteral("+22"));
        QCOMPARE(text(rules, 1, 0), QStringLiteral("ip-1s"));
        QCOMPARE(text(rules, 1, 1), QStringLiteral("11"));
        QCOMPARE(text(rules, 1, 2), QStringLiteral("0"));
        QCOMPARE(text(rules, 1, 3), QStringLiteral("−11"));

        // The clients whose outcome differs, whom Apply would start refusing first.
        using C = Ui::TryLogDialog;
        const QTableWidget* t = d.clientsTable();
        QCOMPARE(t->rowCount(), 3);
        // A log of one day: the date is in the line above, the cells say the time.
        QCOMPARE(text(t, 0, C::Client), QStringLiteral("192.0.2.10"));
        QCOMPARE(text(t, 0, C::Outcome), QStringLiteral("Refused only by the edited rules"));
        QCOMPARE(text(t, 0, C::Requests), QStringLiteral("30"));
        QCOMPARE(text(t, 0, C::RefusedInForce), QStringLiteral("0"));
        QCOMPARE(text(t, 0, C::RefusedEdited), QStringLiteral("20"));
        QCOMPARE(text(t, 0, C::FirstRefusal), QStringLiteral("05:00:10"));  // its 11th request
        // The window's count when it refused (refusals do not count: 10 of 10), until 05:01:00.
        QCOMPARE(text(t, 0, C::Why), QStringLiteral("10 requests in the 60 s window of ip-1m (limit 10)"));
        QVERIFY2(t->item(0, C::Why)->toolTip().contains(QStringLiteral("passes again in 50 s")), qPrintable(t->item(0, C::Why)->toolTip()));
        QCOMPARE(text(t, 0, C::UserAgent), QString::fromLatin1(Googlebot));
        QCOMPARE(text(t, 0, C::Crawler), QStringLiteral("Googlebot"));

        QCOMPARE(text(t, 1, C::Client), QStringLiteral("192.0.2.20"));
        QCOMPARE(text(t, 1, C::Outcome), QStringLiteral("Refused only by the rules in force"));
        QCOMPARE(text(t, 1, C::Requests), QStringLiteral("5"));
        QCOMPARE(text(t, 1, C::RefusedInForce), QStringLiteral("2"));
        QCOMPARE(text(t, 1, C::RefusedEdited), QStringLiteral("0"));
        QCOMPARE(text(t, 1, C::FirstRefusal), QStringLiteral("05:00:40"));
        QVERIFY2(text(t, 1, C::Why).contains(QStringLiteral("window of ip-1s (limit 3)")), qPrintable(text(t, 1, C::Why)));
        QCOMPARE(text(t, 1, C::Crawler), QStringLiteral("–"));

        QCOMPARE(text(t, 2, C::Client), QStringLiteral("192.0.2.40"));
        QCOMPARE(text(t, 2, C::Outcome), QStringLiteral("Refused less often if applied"));
        QCOMPARE(text(t, 2, C::Requests), QStringLiteral("12"));
        QCOMPARE(text(t, 2, C::RefusedInForce), QStringLiteral("9"));
        QCOMPARE(text(t, 2, C::RefusedEdited), QStringLiteral("2"));
        QCOMPARE(text(t, 2, C::FirstRefusal), QStringLiteral("05:00:50"));
        QVERIFY2(text(t, 2, C::Why).contains(QStringLiteral("window of ip-1m (limit 10)")), qPrintable(text(t, 2, C::Why)));
        QCOMPARE(text(t, 2, C::UserAgent), QString::fromLatin1(Curl));
    }

    void theRulesViewReplaysTheFormAgainstTheRulesInForce()
    {
        QTemporaryDir dir;
        // 5 requests in one second: within the default 6 per 3 s, over 3 per 3 s.
        std::string log;
        for (int i = 0; i < 5; ++i)
            log += line("198.51.100.7", 0, "/item/" + std::to_string(i), Browser);
        const QString path = dir.filePath(QStringLiteral("access.log"));
        writeFile(path, log);

        ConsoleStack s;
        Ui::MainWindow& w = *s.mainWindow;
        w.showView(Ui::MainWindow::Rules);
        s.console->refreshNow();
        // The operator tightens the per-IP burst level from 6 to 3 and does not apply it.
        auto* levels = w.rules()->findChild<Ui::LevelsEditor*>();
        QVERIFY(levels);
        levels->findChildren<QSpinBox*>()[0]->setValue(3);
        QVERIFY(w.rules()->dirty());
        QPushButton* tryButton = buttonWithText(w.rules(), QStringLiteral("Try on a log…"));
        QVERIFY(tryButton && tryButton->isEnabled());
        tryButton->click();
        Ui::TryLogDialog* d = w.rules()->tryLogDialog();
        QVERIFY(d && d->isVisible());
        QSignalSpy ended(d, &Ui::TryLogDialog::replayEnded);
        d->setFiles({path});
        QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 10000);
        QCOMPARE(d->summaryLabel()->text(),
                 QStringLiteral("The edited rules would refuse 2 requests from 1 client; the rules in force refuse 0 from 0."));
        QCOMPARE(d->clientsTable()->rowCount(), 1);
        QCOMPARE(text(d->clientsTable(), 0, Ui::TryLogDialog::Client), QStringLiteral("198.51.100.7"));
        QCOMPARE(text(d->clientsTable(), 0, Ui::TryLogDialog::RefusedEdited), QStringLiteral("2"));
        QVERIFY2(text(d->clientsTable(), 0, Ui::TryLogDialog::Why).contains(QStringLiteral("(limit 3)")),
                 qPrintable(text(d->clientsTable(), 0, Ui::TryLogDialog::Why)));
        // Nothing was applied: the stored burst level is still 6.
        QCOMPARE(s.store->config().rules[0].levels[0].limit, 6u);
        QVERIFY(w.rules()->dirty());
        // Closing it deletes it.
        d->close();
        QTRY_VERIFY(!w.rules()->tryLogDialog());
    }

    void cancelStopsAMillionLineReplayAndTheWindowKeepsWorking()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("big.log"));
        constexpr int Lines = 1'000'000;
        {
            // 1,000 clients, 100 lines a second: 10,000 s of log.
            std::string chunk;
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            for (int i = 0; i < Lines; ++i) {
                char client[32];
                std::snprintf(client, sizeof client, "10.%d.%d.%d", i % 1000 / 250, i % 250, 1 + i % 7);
                chunk += line(client, i / 100, "/p", Curl);
                if (chunk.size() > (1 << 20)) {
                    QCOMPARE(f.write(chunk.data(), qint64(chunk.size())), qint64(chunk.size()));
                    chunk.clear();
                }
            }
            QCOMPARE(f.write(chunk.data(), qint64(chunk.size())), qint64(chunk.size()));
        }
        Ui::TryLogDialog d(perIp(3, Core::SECOND), perIp(10, Core::MINUTE));
        d.show();
        int ticks = 0;
        QTimer timer;
        timer.setInterval(10);
        connect(&timer, &QTimer::timeout, [&] { ++ticks; });
        timer.start();
        QSignalSpy ended(&d, &Ui::TryLogDialog::replayEnded);

        d.setFiles({path});
        // setFiles returned at once: the replay runs on another thread.
        QVERIFY(d.running());
        QVERIFY(d.cancelButton()->isEnabled());
        QCOMPARE(ended.count(), 0);
        // The GUI thread keeps handling events while it runs: the timer ticks and progress arrives.
        const int ticksBefore = ticks;
        QTRY_VERIFY_WITH_TIMEOUT(d.progressBar()->maximum() == 1000 && d.progressBar()->value() > 0, 20000);
        QTRY_VERIFY_WITH_TIMEOUT(ticks >= ticksBefore + 5, 5000);
        QVERIFY2(d.running(), "the replay ended before it could be cancelled");

        QElapsedTimer clock;
        clock.start();
        QTest::mouseClick(d.cancelButton(), Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 10000);
        qInfo("cancelled after %lld ms, %llu of %d lines read", qint64(clock.elapsed()),
              (unsigned long long)d.result()->lines, Lines);
        QVERIFY(!d.running());
        QVERIFY(d.result()->cancelled);
        QVERIFY(d.result()->lines < std::uint64_t(Lines));
        QVERIFY2(d.summaryLabel()->text().startsWith(QStringLiteral("Cancelled after")), qPrintable(d.summaryLabel()->text()));
        QCOMPARE(d.clientsTable()->rowCount(), 0);

        // Closing the dialog while it runs stops and joins the thread before close() returns.
        d.setFiles({path});
        QVERIFY(d.running());
        QTRY_VERIFY_WITH_TIMEOUT(d.progressBar()->maximum() == 1000 && d.progressBar()->value() > 0, 20000);
        d.close();
        QVERIFY(!d.running());
        QVERIFY(!d.isVisible());
        QTest::qWait(50);  // what the thread posted before it stopped is dropped, not shown
        QCOMPARE(ended.count(), 1);
    }

    void aFileItCannotReadGetsAClearError()
    {
        QTemporaryDir dir;
        Ui::TryLogDialog d(perIp(3, Core::SECOND), perIp(10, Core::MINUTE));
        d.show();
        QSignalSpy ended(&d, &Ui::TryLogDialog::replayEnded);

        const QString missing = dir.filePath(QStringLiteral("no-such.log"));
        d.setFiles({missing});
        QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 10000);
        QVERIFY(d.problemLabel()->isVisible());
        QCOMPARE(d.problemLabel()->text(), QStringLiteral("Cannot replay: %1: cannot read: No such file or directory").arg(missing));
        QCOMPARE(d.summaryLabel()->text(), QStringLiteral("Nothing was replayed."));
        QCOMPARE(d.clientsTable()->rowCount(), 0);

        const QString notes = dir.filePath(QStringLiteral("notes.txt"));
        writeFile(notes, "shopping list\neggs\nmilk\n");
        d.setFiles({notes});
        QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 2, 10000);
        QVERIFY(d.problemLabel()->isVisible());
        QVERIFY2(d.problemLabel()->text().startsWith(QStringLiteral("notes.txt: not a log this reads: none of its first 3 lines")),
                 qPrintable(d.problemLabel()->text()));
        QCOMPARE(d.summaryLabel()->text(), QStringLiteral("Nothing to compare: the logs held no request this reads."));

        // A log with a bad line in it: replayed, and the line is named.
        std::string log = line("192.0.2.1", 0, "/", Browser) + "garbage that is no request\n" + line("192.0.2.1", 1, "/", Browser);
        const QString mixed = dir.filePath(QStringLiteral("mixed.log"));
        writeFile(mixed, log);
        d.setFiles({mixed});
        QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 3, 10000);
        QVERIFY2(d.problemLabel()->text().startsWith(QStringLiteral("1 line did not parse and was left out; the first: line 2 of mixed.log: ")),
                 qPrintable(d.problemLabel()->text()));
        QCOMPARE(d.summaryLabel()->text(),
                 QStringLiteral("The edited rules would refuse 0 requests from 0 clients; the rules in force refuse 0 from 0."));
    }
};

QTEST_MAIN(TryLogTest)
#include "test_try_log.moc"
