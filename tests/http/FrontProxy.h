// SPDX-License-Identifier: GPL-3.0-or-later
// A real nginx or HAProxy (Debian's packages, installed by scripts/setup) in
// front of what a test started, run with a configuration taken from docs/:
// in the foreground, from a temporary folder of its own, listening on
// 127.0.0.1 on a free port, stopped with the test. The test gives the part
// an operator writes (for nginx what goes inside `http { }`, for HAProxy the
// sections after `global`); this wraps it in what a test needs (no daemon,
// files in the folder, HAProxy's stats socket). When the binary is missing,
// start() fails and says so (these suites never skip).
#pragma once

#include "HttpTestClient.h"  // freeLoopbackPort, Connection

#include <QProcess>
#include <QTemporaryDir>
#include <QThread>

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

namespace FloodgateTest {

// Every `from` in `text` becomes `to`; returns how many there were, so a
// test can insist that a documented text it adapts is still there.
inline int replaceAll(std::string& text, const std::string& from, const std::string& to)
{
    int count = 0;
    for (std::size_t p = text.find(from); !from.empty() && p != std::string::npos; p = text.find(from, p + to.size()), ++count)
        text.replace(p, from.size(), to);
    return count;
}

class FrontProxy {
public:
    enum class Kind { Nginx, Haproxy };

    explicit FrontProxy(Kind kind) : m_kind(kind) {}
    ~FrontProxy() { stop(); }
    FrontProxy(const FrontProxy&) = delete;
    FrontProxy& operator=(const FrontProxy&) = delete;

    // Starts it with `site`, in which every `listenText` ("listen 80;",
    // "bind :80") becomes the free port, and waits (at most 5 s) until the
    // port accepts. False with error() saying why; a port taken between
    // choosing and binding it is retried with another.
    bool start(const std::string& site, const std::string& listenText)
    {
        if (!m_dir.isValid())
            return failed("cannot create a temporary folder: " + m_dir.errorString().toStdString());
        const std::string binary = findBinary();
        if (binary.empty())
            return failed(std::string(name()) + " is not installed (scripts/setup installs it)");
        for (int attempt = 0; attempt < 5; ++attempt) {
            m_port = freeLoopbackPort();
            std::string mine = site;
            if (replaceAll(mine, listenText, listenLine()) == 0)
                return failed("the configuration has no \"" + listenText + "\" to put the test's port in");
            if (!writeConfig(mine))
                return false;
            if (launch(binary))
                return true;
            if (!m_portTaken)
                return false;
        }
        return false;
    }

    std::uint16_t port() const { return m_port; }
    const std::string& error() const { return m_error; }
    // A file in its folder (a map the configuration names).
    std::string path(const std::string& file) const { return m_dir.filePath(QString::fromStdString(file)).toStdString(); }
    // What it printed and logged so far (for a failure message).
    std::string output()
    {
        std::string out = m_process ? m_process->readAll().toStdString() : std::string();
        m_output += out;
        std::ifstream log(path("error.log"));
        return m_output + std::string((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    }

    // HAProxy only: `show stat` on its stats socket, the CSV as it comes.
    std::string haproxyStats() const
    {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        const std::string sock = path("stats.sock");
        std::strncpy(a.sun_path, sock.c_str(), sizeof a.sun_path - 1);
        std::string out;
        if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
            const char command[] = "show stat\n";
            if (::send(fd, command, sizeof command - 1, MSG_NOSIGNAL) == ssize_t(sizeof command - 1)) {
                timeval tv{2, 0};
                ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
                char buf[16384];
                for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
                    out.append(buf, std::size_t(n));
            }
        }
        if (fd >= 0)
            ::close(fd);
        return out;
    }

    // SIGTERM, then SIGKILL when it has not ended within 3 s.
    void stop()
    {
        if (!m_process)
            return;
        if (m_process->state() != QProcess::NotRunning) {
            m_process->terminate();
            if (!m_process->waitForFinished(3000)) {
                m_process->kill();
                m_process->waitForFinished(3000);
            }
        }
        m_process.reset();
    }

private:
    const char* name() const { return m_kind == Kind::Nginx ? "nginx" : "haproxy"; }
    std::string findBinary() const
    {
        for (const char* dir : {"/usr/sbin/", "/usr/bin/"})
            if (std::filesystem::exists(std::string(dir) + name()))
                return std::string(dir) + name();
        return {};
    }
    std::string listenLine() const
    {
        const std::string address = "127.0.0.1:" + std::to_string(m_port);
        return m_kind == Kind::Nginx ? "listen " + address + ";" : "bind " + address;
    }
    bool failed(std::string why)
    {
        m_error = std::move(why);
        return false;
    }

    bool writeConfig(const std::string& site)
    {
        const std::string dir = m_dir.path().toStdString();
        std::ofstream conf(path("front.conf"), std::ios::trunc);
        if (m_kind == Kind::Nginx) {
            // One process, in the foreground; every file nginx writes in the folder.
            std::filesystem::create_directories(dir + "/tmp");
            conf << "daemon off;\nmaster_process off;\nerror_log " << dir << "/error.log info;\npid " << dir << "/nginx.pid;\n"
                 << "events { worker_connections 256; }\nhttp {\n  access_log off;\n"
                 << "  client_body_temp_path " << dir << "/tmp/body;\n  proxy_temp_path " << dir << "/tmp/proxy;\n"
                 << "  fastcgi_temp_path " << dir << "/tmp/fcgi;\n  uwsgi_temp_path " << dir << "/tmp/uwsgi;\n"
                 << "  scgi_temp_path " << dir << "/tmp/scgi;\n"
                 << site << "\n}\n";
        } else {
            // The stats socket is how a test sees the servers' state and checks.
            conf << "global\n    stats socket " << path("stats.sock") << " mode 600 level admin\n\n" << site << "\n";
        }
        if (!conf)
            return failed("cannot write " + path("front.conf"));
        return true;
    }

    bool launch(const std::string& binary)
    {
        stop();
        m_portTaken = false;
        m_output.clear();
        std::filesystem::remove(path("error.log"));
        QStringList args;
        if (m_kind == Kind::Nginx)
            args = {QStringLiteral("-p"), m_dir.path(), QStringLiteral("-c"), QString::fromStdString(path("front.conf"))};
        else
            args = {QStringLiteral("-db"), QStringLiteral("-f"), QString::fromStdString(path("front.conf"))};
        m_process = std::make_unique<QProcess>();
        m_process->setProcessChannelMode(QProcess::MergedChannels);
        // A test that crashes takes its proxy with it.
        m_process->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
        m_process->start(QString::fromStdString(binary), args);
        if (!m_process->waitForStarted(5000))
            return failed(std::string("cannot run ") + name() + ": " + m_process->errorString().toStdString());
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (std::chrono::steady_clock::now() < deadline) {
            // Ended: the configuration was refused or the port was taken.
            if (m_process->state() == QProcess::NotRunning || m_process->waitForFinished(0)) {
                const std::string out = output();
                m_portTaken = out.find("Address already in use") != std::string::npos
                    || out.find("cannot bind socket") != std::string::npos;
                m_process.reset();
                return failed(std::string(name()) + " ended at start: " + out);
            }
            Connection probe;
            probe.open(m_port, "127.0.0.1");
            if (probe.isOpen())
                return true;
            QThread::msleep(20);
        }
        const std::string out = output();
        stop();
        return failed(std::string(name()) + " did not listen within 5 s: " + out);
    }

    Kind m_kind;
    QTemporaryDir m_dir;
    std::unique_ptr<QProcess> m_process;
    std::uint16_t m_port = 0;
    bool m_portTaken = false;
    std::string m_output;
    std::string m_error;
};

} // namespace FloodgateTest
