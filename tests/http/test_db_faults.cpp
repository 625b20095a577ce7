// SPDX-License-Identifier: GPL-3.0-or-later
// The built `floodgate`, headless, with its database on a file system that
// fails under it: a small tmpfs that fills up, and an ext4 image that the
// kernel turns read-only while Floodgate runs (errors=remount-ro, the way a
// failing disk goes). Writes through the admin API must fail with a clear
// message and 503, a failed write must not be applied, nothing committed
// before may be lost (the file is read back with sqlite3 after the stop),
// and the traffic port keeps answering. Mounting needs root: without it the
// tests skip and say why.
#include <QtTest>

#ifndef Q_MOC_RUN
#include "ChildProcess.h"
#include "HttpTestClient.h"

#include <sqlite3.h>

#include <cerrno>
#include <cstdio>
#include <set>
#endif

using namespace FloodgateTest;

namespace {

// Runs a system command to its end; true on exit code 0, its output in *out.
bool run(const QString& program, const QStringList& args, QString* out = nullptr)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(program, args);
    const bool finished = p.waitForFinished(20000);
    if (out)
        *out = QString::fromUtf8(p.readAll()).trimmed();
    return finished && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

// A mount that is undone when the test ends (before its folder is removed).
struct Mount {
    QString dir;
    bool mounted = false;
    ~Mount()
    {
        if (mounted)
            run(QStringLiteral("umount"), {dir});
    }
};

QStringList serveArgs(const QString& db)
{
    return QStringList{QStringLiteral("--headless"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--admin"),
                       QStringLiteral("127.0.0.1:0"), QStringLiteral("--db"), db, QStringLiteral("--log"), QStringLiteral("off"),
                       QStringLiteral("--threads"), QStringLiteral("1")};
}

std::string tokenHeader(const QString& db)
{
    QString err, token;
    if (runToEnd({QStringLiteral("token"), QStringLiteral("--db"), db}, &err, &token) != 0)
        return {};
    return "Authorization: Bearer " + token.trimmed().toStdString() + "\r\n";
}

// POST one blocklist entry; the reason names it in the database.
Response block(std::uint16_t adminPort, const std::string& auth, const std::string& address, const std::string& reason)
{
    return fetch(adminPort, withBody("POST", "/api/v1/lists/blocklist",
                                     "{\"address\":\"" + address + "\",\"ttl\":\"7d\",\"reason\":\"" + reason + "\"}",
                                     "Content-Type: application/json\r\n" + auth),
                 5000)
        .value_or(Response{});
}

// The reasons of every blocklist row in the file, read with sqlite3; "!" + the
// error when it cannot be read, "!integrity: ..." when the file is damaged.
std::set<std::string> storedReasons(const QString& db)
{
    std::set<std::string> out;
    sqlite3* h = nullptr;
    if (sqlite3_open_v2(db.toUtf8().constData(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
        out.insert(std::string("!") + sqlite3_errmsg(h));
        sqlite3_close(h);
        return out;
    }
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
        const std::string verdict = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        if (verdict != "ok")
            out.insert("!integrity: " + verdict);
    }
    sqlite3_finalize(s);
    if (sqlite3_prepare_v2(h, "SELECT reason FROM list_entries WHERE list = 'blocklist'", -1, &s, nullptr) != SQLITE_OK)
        out.insert(std::string("!") + sqlite3_errmsg(h));
    else
        while (sqlite3_step(s) == SQLITE_ROW)
            out.insert(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
    sqlite3_finalize(s);
    sqlite3_close(h);
    return out;
}

// Fills the file system holding `path` to the last byte.
qint64 fillUp(const QString& path)
{
    std::FILE* f = std::fopen(path.toUtf8().constData(), "wb");
    if (!f)
        return 0;
    std::setvbuf(f, nullptr, _IONBF, 0);
    static const std::string block(4096, 'f');
    qint64 written = 0;
    while (std::fwrite(block.data(), 1, block.size(), f) == block.size())
        written += qint64(block.size());
    while (std::fwrite(block.data(), 1, 1, f) == 1)  // the last partial block
        ++written;
    std::fclose(f);
    return written;
}

std::string loopback(int i)
{
    return "127.0." + std::to_string(1 + i / 250) + "." + std::to_string(1 + i % 250);
}


// Starts the binary on `db`, fetches its admin token, and commits three
// blocklist entries ("before-0..2" for 127.0.1.1..3) through the API.
void startAndCommit(Child& c, const QString& db, std::string& auth, std::set<std::string>& committed)
{
    QVERIFY2(c.start(serveArgs(db)), qPrintable(QString::fromUtf8(c.proc.readAllStandardError())));
    auth = tokenHeader(db);
    QVERIFY(!auth.empty());
    for (int i = 0; i < 3; ++i) {
        const std::string reason = "before-" + std::to_string(i);
        QCOMPARE(block(c.adminPort, auth, loopback(i), reason).status, 201);
        committed.insert(reason);
    }
}

} // namespace

class TestDbFaults : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aFullDiskFailsWritesWith503AndLosesNothing()
    {
        QTemporaryDir mountPoint;
        Mount m{mountPoint.path()};
        QString why;
        if (!run(QStringLiteral("mount"), {QStringLiteral("-t"), QStringLiteral("tmpfs"), QStringLiteral("-o"), QStringLiteral("size=4m,mode=0700"),
                                           QStringLiteral("tmpfs"), m.dir},
                 &why))
            QSKIP(qPrintable(QStringLiteral("cannot mount a 4 MiB tmpfs for the database (this test needs root): ") + why));
        m.mounted = true;
        const QString db = m.dir + QStringLiteral("/floodgate.db");
        Child c;
        std::string auth;
        std::set<std::string> committed;
        startAndCommit(c, db, auth, committed);
        if (QTest::currentTestFailed())
            return;
        QVERIFY(fillUp(m.dir + QStringLiteral("/filler")) > 0);

        // SQLite may still have room in its own files: write until it needs more.
        const std::string padding(480, 'p');  // a reason holds at most 500 characters
        Response failed;
        std::string failedAddress, failedReason;
        for (int i = 3; i < 2000 && failed.status == 0; ++i) {
            const std::string reason = "full-" + std::to_string(i) + "-" + padding;
            const Response r = block(c.adminPort, auth, loopback(i), reason);
            if (r.status == 201) {
                committed.insert(reason);
                continue;
            }
            failed = r;
            failedAddress = loopback(i);
            failedReason = reason;
        }
        QVERIFY2(failed.status != 0, "every write succeeded: the file system never filled up");
        qInfo("the disk filled after %zu commits: %d %s", committed.size(), failed.status, failed.body.c_str());
        QVERIFY2(failed.body.find("\"error\"") != std::string::npos, failed.body.c_str());
        QVERIFY2(failed.body.find("full") != std::string::npos, failed.body.c_str());  // says why
        QCOMPARE(failed.status, 503);

        // The failed write was not applied; the committed ones still are; the
        // traffic port answers.
        QCOMPARE(fetch(c.port, get("/"), 3000, failedAddress.c_str()).value_or(Response{}).status, 200);
        QCOMPARE(fetch(c.port, get("/"), 3000, loopback(0).c_str()).value_or(Response{}).status, 403);
        QCOMPARE(fetch(c.port, get("/"), 3000, "127.0.99.1").value_or(Response{}).status, 200);
        // Reads still work.
        const auto list = fetch(c.adminPort, get("/api/v1/lists/blocklist", auth));
        QVERIFY(list);
        QCOMPARE(list->status, 200);
        QVERIFY(list->body.find("before-2") != std::string::npos);

        // Room again: the same write goes through without a restart.
        QVERIFY(QFile::remove(m.dir + QStringLiteral("/filler")));
        QCOMPARE(block(c.adminPort, auth, failedAddress, failedReason).status, 201);
        committed.insert(failedReason);
        QCOMPARE(fetch(c.port, get("/"), 3000, failedAddress.c_str()).value_or(Response{}).status, 403);
        QCOMPARE(c.stop(), 0);

        const std::set<std::string> stored = storedReasons(db);
        QCOMPARE(stored.size(), committed.size());
        QVERIFY(stored == committed);
    }

    void aFileSystemGoneReadOnlyFailsWritesWith503AndLosesNothing()
    {
        QTemporaryDir work;
        const QString image = work.filePath(QStringLiteral("fs.img"));
        {
            QFile f(image);
            QVERIFY(f.open(QIODevice::WriteOnly));
            QVERIFY(f.resize(16 * 1024 * 1024));
        }
        QString why;
        if (!run(QStringLiteral("mkfs.ext4"), {QStringLiteral("-q"), QStringLiteral("-F"), image}, &why))
            QSKIP(qPrintable(QStringLiteral("cannot make an ext4 image (mkfs.ext4 from e2fsprogs): ") + why));
        QTemporaryDir mountPoint;
        Mount m{mountPoint.path()};
        if (!run(QStringLiteral("mount"), {QStringLiteral("-o"), QStringLiteral("loop,errors=remount-ro"), image, m.dir}, &why))
            QSKIP(qPrintable(QStringLiteral("cannot loop-mount an ext4 image (this test needs root and loop devices): ") + why));
        m.mounted = true;
        QString device;
        run(QStringLiteral("findmnt"), {QStringLiteral("-n"), QStringLiteral("-o"), QStringLiteral("SOURCE"), m.dir}, &device);
        // The kernel's own fault switch: ext4 reports an error and, with
        // errors=remount-ro, turns the whole file system read-only at once,
        // open files included (what `chmod` cannot do to root, nor a remount
        // while files are open for writing).
        const QString trigger = QStringLiteral("/sys/fs/ext4/%1/trigger_fs_error").arg(QFileInfo(device).fileName());
        if (!QFileInfo::exists(trigger))
            QSKIP(qPrintable(QStringLiteral("no ext4 error trigger at ") + trigger));

        const QString db = m.dir + QStringLiteral("/floodgate.db");
        Child c;
        std::string auth;
        std::set<std::string> committed;
        startAndCommit(c, db, auth, committed);
        if (QTest::currentTestFailed())
            return;

        {
            QFile t(trigger);
            QVERIFY(t.open(QIODevice::WriteOnly));
            t.write("floodgate test_db_faults");
        }
        QFile probe(m.dir + QStringLiteral("/probe"));
        QVERIFY2(!probe.open(QIODevice::WriteOnly), "the file system is read-only now");

        for (int i = 3; i < 6; ++i) {
            const Response r = block(c.adminPort, auth, loopback(i), "after-" + std::to_string(i));
            if (i == 3) {
                qInfo("on the read-only file system: %d %s", r.status, r.body.c_str());
                QVERIFY2(r.body.find("read-only") != std::string::npos, r.body.c_str());
            }
            QVERIFY2(r.body.find("\"error\"") != std::string::npos, r.body.c_str());
            QVERIFY2(r.body.find("not saved") != std::string::npos, r.body.c_str());
            QCOMPARE(r.status, 503);
            QCOMPARE(fetch(c.port, get("/"), 3000, loopback(i).c_str()).value_or(Response{}).status, 200);  // not applied
        }
        QCOMPARE(fetch(c.port, get("/"), 3000, loopback(1).c_str()).value_or(Response{}).status, 403);
        QCOMPARE(fetch(c.port, get("/"), 3000, "127.0.99.1").value_or(Response{}).status, 200);
        const auto list = fetch(c.adminPort, get("/api/v1/lists/blocklist", auth));
        QVERIFY(list);
        QCOMPARE(list->status, 200);
        QVERIFY(list->body.find("before-2") != std::string::npos);
        const int exitCode = c.stop();
        qInfo("stopped with exit code %d; stderr: %s", exitCode, c.proc.readAllStandardError().constData());
        QVERIFY(exitCode >= 0);  // it stops by itself, whatever it could not write

        // What is on the read-only disk, copied out (SQLite cannot open a WAL
        // database in place on a read-only file system without its -shm).
        QTemporaryDir copy;
        for (const QString& suffix : {QString(), QStringLiteral("-wal"), QStringLiteral("-shm")})
            if (QFile::exists(db + suffix))
                QVERIFY(QFile::copy(db + suffix, copy.filePath(QStringLiteral("floodgate.db")) + suffix));
        const std::set<std::string> stored = storedReasons(copy.filePath(QStringLiteral("floodgate.db")));
        QVERIFY(stored == committed);
    }
};

QTEST_GUILESS_MAIN(TestDbFaults)
#include "test_db_faults.moc"
