// SPDX-License-Identifier: GPL-3.0-or-later
// The built `floodgate` as a child process (headless or the console: both
// print the same start-up lines): started with arguments, its start-up
// lines read for the real ports, stopped with a signal. Every child
// gets its own XDG_DATA_HOME so nothing lands in the developer's real data
// folder when a test does not name --db (and no STATE_DIRECTORY, which
// would win over it, from a test run started by systemd).
#pragma once

#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <csignal>
#include <cstdint>
#include <string>

namespace FloodgateTest {

inline QProcessEnvironment childEnvironment()
{
    static QTemporaryDir dataHome;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("XDG_DATA_HOME"), dataHome.path());
    env.remove(QStringLiteral("STATE_DIRECTORY"));
    return env;
}

struct Child {
    QProcess proc;
    std::uint16_t port = 0;
    std::uint16_t adminPort = 0;
    QString firstLine;
    QString startup;  // every start-up line

    bool start(const QStringList& args, const QProcessEnvironment& env = childEnvironment())
    {
        proc.setProcessEnvironment(env);
        proc.start(QStringLiteral(FLOODGATE_BINARY), args);
        if (!proc.waitForStarted(5000))
            return false;
        // The start-up lines come before serving; "limiter log" is the last.
        QString out;
        for (int i = 0; i < 100 && !out.contains(QStringLiteral("limiter log")); ++i) {
            proc.waitForReadyRead(100);
            out += QString::fromUtf8(proc.readAllStandardOutput());
            if (proc.state() != QProcess::Running)
                break;
        }
        startup = out;
        const auto listening = QRegularExpression(QStringLiteral("listening on http://127\\.0\\.0\\.1:(\\d+) \\(([^)]*)\\)")).match(out);
        const auto admin = QRegularExpression(QStringLiteral("admin on http://[0-9.]+:(\\d+)")).match(out);
        firstLine = out.section(QLatin1Char('\n'), 0, 0);
        if (!listening.hasMatch())
            return false;
        port = std::uint16_t(listening.captured(1).toUInt());
        adminPort = admin.hasMatch() ? std::uint16_t(admin.captured(1).toUInt()) : 0;
        return true;
    }
    int stop(int signal = SIGTERM)
    {
        // Stopped already (or never started): pid 0 would signal the test's
        // whole process group, the test itself included.
        if (proc.processId() == 0)
            return proc.exitStatus() == QProcess::NormalExit ? proc.exitCode() : -1;
        ::kill(pid_t(proc.processId()), signal);
        if (!proc.waitForFinished(8000)) {
            proc.kill();
            proc.waitForFinished();
            return -1;
        }
        return proc.exitStatus() == QProcess::NormalExit ? proc.exitCode() : -1;
    }
    // SIGKILL: no shutdown code runs at all.
    void kill()
    {
        if (proc.processId() == 0)
            return;
        ::kill(pid_t(proc.processId()), SIGKILL);
        proc.waitForFinished(8000);
    }
};

// Runs to the end; returns the exit code, stderr in *err, stdout in *out.
inline int runToEnd(const QStringList& args, QString* err, QString* out = nullptr, int timeoutMs = 15000,
                    const QProcessEnvironment& env = childEnvironment())
{
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(FLOODGATE_BINARY), args);
    p.waitForFinished(timeoutMs);
    if (err)
        *err = QString::fromUtf8(p.readAllStandardError());
    if (out)
        *out = QString::fromUtf8(p.readAllStandardOutput());
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
}

// A cluster key for the nodes a test starts (docs/CLUSTER.md), made once
// per test process as an operator makes it: `floodgate cluster-key FILE`.
inline QString clusterKeyFile()
{
    static QTemporaryDir dir;
    static const QString path = [] {
        const QString file = dir.filePath(QStringLiteral("cluster.key"));
        QString err;
        if (runToEnd({QStringLiteral("cluster-key"), file}, &err) != 0)
            qWarning("floodgate cluster-key failed: %s", qPrintable(err));
        return file;
    }();
    return path;
}

// The admin API's token of a database, read as scripts read it:
// `floodgate token --db PATH`. Empty when the command fails.
inline std::string adminToken(const QString& db)
{
    QString out;
    if (runToEnd({QStringLiteral("token"), QStringLiteral("--db"), db}, nullptr, &out) != 0)
        return {};
    return out.trimmed().toStdString();
}

} // namespace FloodgateTest
