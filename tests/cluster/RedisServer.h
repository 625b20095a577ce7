// SPDX-License-Identifier: GPL-3.0-or-later
// A redis-server of the test's own, for every cluster suite: started on
// 127.0.0.1 on a free port in a temporary folder, with no persistence
// (--save "" --appendonly no, so a restart is an empty Redis), plus the
// test's own arguments ("--requirepass", "secret"; "--maxmemory", "1mb").
// It can be paused (SIGSTOP: the kernel still accepts connections, nothing
// answers), resumed, killed and restarted on the same port. The binary is
// installed by scripts/setup: when it is missing, start() fails and says so
// (a cluster test never skips).
#pragma once

#include "cluster/RedisConnection.h"
#include "HttpTestClient.h"  // freeLoopbackPort

#include <QDeadlineTimer>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>

#include <sys/prctl.h>

#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace FloodgateTest {

class RedisServer {
public:
    RedisServer() = default;
    ~RedisServer() { stop(); }
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;

    // Starts it and waits (at most 5 s) until it answers PING. false with
    // error() saying why; a port taken between choosing and binding it is
    // retried with another.
    bool start(const QStringList& extraArgs = {})
    {
        m_binary = QStandardPaths::findExecutable(QStringLiteral("redis-server"));
        if (m_binary.isEmpty())
            return failed(QStringLiteral("redis-server is not installed (scripts/setup installs it)"));
        if (!m_dir.isValid())
            return failed(QStringLiteral("cannot create a temporary folder: ") + m_dir.errorString());
        m_extraArgs = extraArgs;
        const int pass = extraArgs.indexOf(QStringLiteral("--requirepass"));
        m_password = pass >= 0 && pass + 1 < extraArgs.size() ? extraArgs[pass + 1].toStdString() : std::string();
        for (int attempt = 0; attempt < 5; ++attempt) {
            if (launch(freeLoopbackPort()))
                return true;
            if (!m_portTaken)
                return false;
        }
        return false;
    }

    // start() on a port the test chose (one a node was told about before
    // Redis was there).
    bool startOn(std::uint16_t port, const QStringList& extraArgs = {})
    {
        m_binary = QStandardPaths::findExecutable(QStringLiteral("redis-server"));
        if (m_binary.isEmpty())
            return failed(QStringLiteral("redis-server is not installed (scripts/setup installs it)"));
        m_extraArgs = extraArgs;
        return launch(port);
    }

    const QString& error() const { return m_error; }
    std::uint16_t port() const { return m_port; }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(m_port); }
    // What a node is given as --redis: url() with the server's password
    // (--requirepass), if it has one.
    std::string nodeUrl() const
    {
        return m_password.empty() ? url() : "redis://:" + m_password + "@127.0.0.1:" + std::to_string(m_port);
    }
    // A place for --unixsocket: inside the server's own folder.
    QString unixSocketPath() const { return m_dir.filePath(QStringLiteral("redis.sock")); }
    qint64 pid() const { return m_process ? m_process->processId() : 0; }

    void pause() { signal(SIGSTOP); }
    void resume() { signal(SIGCONT); }
    // SIGKILL, and the process reaped: its port is closed when this returns.
    void kill()
    {
        if (!running())
            return;
        signal(SIGKILL);
        m_process->waitForFinished(5000);
        m_process.reset();
    }
    // Back on the same port with the same arguments, and empty.
    bool restart()
    {
        stop();
        return launch(m_port);
    }
    // SIGTERM (after SIGCONT, or a paused server would never see it), then
    // SIGKILL when it has not ended within 2 s.
    void stop()
    {
        m_admin.reset();
        if (!running()) {
            m_process.reset();
            return;
        }
        signal(SIGCONT);
        signal(SIGTERM);
        if (!m_process->waitForFinished(2000)) {
            signal(SIGKILL);
            m_process->waitForFinished(5000);
        }
        m_process.reset();
    }

    // One command as the default user (with the --requirepass password),
    // to look at or prepare the server's state: command({"DBSIZE"}). A
    // failure comes back as an Error reply that starts "fixture: ".
    Floodgate::Cluster::Reply command(std::vector<std::string> args)
    {
        using namespace Floodgate::Cluster;
        const Command c(std::move(args));
        Reply reply;
        Outcome o;
        // One retry on a fresh connection: the kept one may predate a restart.
        for (int attempt = 0; attempt < 2; ++attempt) {
            if (!m_admin || !m_admin->isConnected()) {
                m_admin = std::make_unique<RedisConnection>(adminUrl(), std::chrono::milliseconds(1000), std::chrono::milliseconds(5000));
                o = m_admin->connect();
                if (!o.ok())
                    continue;
            }
            o = m_admin->run(c, reply);
            if (o.ok())
                return reply;
        }
        reply.kind = Reply::Kind::Error;
        reply.text = "fixture: " + o.message;
        return reply;
    }

    // The URL with the server's password, if it has one.
    Floodgate::Cluster::RedisUrl adminUrl() const
    {
        Floodgate::Cluster::RedisUrl u;
        u.host = "127.0.0.1";
        u.port = m_port;
        u.password = m_password;
        return u;
    }

private:
    bool failed(const QString& why)
    {
        m_error = why;
        return false;
    }
    bool running() const { return m_process && m_process->state() != QProcess::NotRunning; }
    void signal(int sig)
    {
        if (running())
            ::kill(pid_t(m_process->processId()), sig);
    }
    QString log() const
    {
        QFile f(m_dir.filePath(QStringLiteral("redis.log")));
        return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
    }

    bool launch(std::uint16_t port)
    {
        m_port = port;
        m_portTaken = false;
        QFile::remove(m_dir.filePath(QStringLiteral("redis.log")));
        QStringList args{QStringLiteral("--port"), QString::number(port), QStringLiteral("--bind"), QStringLiteral("127.0.0.1"),
                         QStringLiteral("--save"), QString(), QStringLiteral("--appendonly"), QStringLiteral("no"),
                         QStringLiteral("--dir"), m_dir.path(), QStringLiteral("--logfile"), m_dir.filePath(QStringLiteral("redis.log")),
                         QStringLiteral("--daemonize"), QStringLiteral("no")};
        args += m_extraArgs;
        m_process = std::make_unique<QProcess>();
        m_process->setStandardOutputFile(m_dir.filePath(QStringLiteral("redis.out")), QIODevice::Append);
        m_process->setStandardErrorFile(m_dir.filePath(QStringLiteral("redis.out")), QIODevice::Append);
        // A test that crashes takes its server with it.
        m_process->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
        m_process->start(m_binary, args);
        if (!m_process->waitForStarted(5000))
            return failed(QStringLiteral("cannot run redis-server: ") + m_process->errorString());
        // Ready when its own log says so (another process may hold the
        // port: a PING alone could reach that one), then when it answers.
        const QDeadlineTimer deadline(5000);
        while (!log().contains(QStringLiteral("Ready to accept connections"))) {
            if (m_process->state() == QProcess::NotRunning || m_process->waitForFinished(0)) {
                const QString text = log();
                m_portTaken = text.contains(QStringLiteral("Address already in use"));
                m_process.reset();
                return failed(QStringLiteral("redis-server ended at start: ") + text.trimmed().section(QLatin1Char('\n'), -3));
            }
            if (deadline.hasExpired()) {
                stop();
                return failed(QStringLiteral("redis-server did not start within 5 s"));
            }
            QThread::msleep(5);
        }
        Floodgate::Cluster::RedisConnection probe(adminUrl(), std::chrono::milliseconds(500), std::chrono::milliseconds(500));
        QString last;
        while (!deadline.hasExpired()) {
            const auto o = probe.connect();
            if (o.ok())
                return true;
            last = QString::fromStdString(o.message);
            QThread::msleep(10);
        }
        stop();
        return failed(QStringLiteral("redis-server did not answer PING within 5 s: ") + last);
    }

    QTemporaryDir m_dir;
    QString m_binary;
    QStringList m_extraArgs;
    std::string m_password;
    std::uint16_t m_port = 0;
    bool m_portTaken = false;
    std::unique_ptr<QProcess> m_process;
    std::unique_ptr<Floodgate::Cluster::RedisConnection> m_admin;
    QString m_error;
};

} // namespace FloodgateTest
