// SPDX-License-Identifier: GPL-3.0-or-later
// What a node says on stderr about a change it read from Redis names that
// change's node, key and actor: bytes anyone who can write to Redis chose.
// They reach stderr (the journal, a terminal) as visible escapes, never as
// a line of their own, a window title or a cleared screen
// (docs/INTERFACE.md: no terminal escapes). A real redis-server, a real
// `floodgate --headless` node, the stream entry XADDed by hand.
#include <QtTest>

#include "ClusterNodes.h"
#include "cluster/ClusterKey.h"
#include "cluster/SharedRecord.h"

#include <chrono>

using namespace FloodgateTest;

class TestClusterEscapes : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void refusedChangeIsEscapedOnStderr()
    {
        RedisServer redis;
        QVERIFY2(redis.start(), qPrintable(redis.error()));
        Cluster cluster(redis);
        Node* a = cluster.start(QStringLiteral("a"));
        QVERIFY(a);

        // A blocklist change whose value is no list entry, tagged with the
        // cluster's key (so it gets as far as being applied): node "a"
        // refuses it and says so, naming its key and who made it.
        std::string why;
        const auto key = Floodgate::Cluster::ClusterKey::load(clusterKeyFile().toStdString(), &why);
        QVERIFY2(key, why.c_str());
        auto change = Floodgate::Cluster::SharedChange::put("blocklist", "\x1b]0;pwned\x07", "garbage", "\x1b[2J\r\xe2\x80\xae\xc2\x9b");
        change.stamp = {std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count(),
                        "evil\nfloodgate: SIGHUP: forged line"};
        const auto added = redis.command({"XADD", "fg:changes", "*", "coll", change.collection, "key", change.key, "rec",
                                          Floodgate::Cluster::encodeRecord(change, *key)});
        QVERIFY2(added.kind == Floodgate::Cluster::Reply::Kind::String, added.text.c_str());

        // Until the line saying so has ended (the node runs on: the cluster
        // stops it at the end).
        QByteArray err;
        const auto said = [&] {
            const auto at = err.indexOf("was not applied here");
            return at >= 0 && err.indexOf('\n', at) >= 0;
        };
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!said() && std::chrono::steady_clock::now() < until) {
            a->child.proc.waitForReadyRead(100);
            err += a->child.proc.readAllStandardError();
        }
        QVERIFY2(said(), err.constData());
        // Named, escaped.
        QVERIFY2(err.contains("(blocklist \\x1B]0;pwned\\x07, by cluster:evil\\nfloodgate: SIGHUP: forged line/\\x1B[2J\\r\\u{202E}\\u{9B})"),
                 err.constData());
        for (const char c : {'\x1b', '\x07', '\r'})
            QVERIFY2(!err.contains(c), qPrintable(QStringLiteral("a raw 0x%1 in:\n").arg(int(c), 2, 16, QLatin1Char('0')) + QString::fromUtf8(err)));
        QVERIFY2(!err.contains("\xe2\x80\xae") && !err.contains("\xc2\x9b"), err.constData());
        for (const QByteArray& line : err.split('\n'))
            QVERIFY2(!line.startsWith("floodgate: SIGHUP"), err.constData());
    }
};

QTEST_GUILESS_MAIN(TestClusterEscapes)
#include "test_cluster_escapes.moc"
