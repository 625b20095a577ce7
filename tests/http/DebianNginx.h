// SPDX-License-Identifier: GPL-3.0-or-later
// Debian's nginx as Debian lays it out: a copy of /etc/nginx (nginx.conf,
// mime.types, conf.d, modules-enabled, ...) in a temporary folder, the
// test's sites in its sites-enabled, which Debian's own nginx.conf includes
// inside http { }. Only what a test cannot use is changed, and each change
// insists that the text it changes is still there:
//   - the absolute /etc/nginx/ paths point into the copy;
//   - `user`, `pid`, `error_log`, `access_log` and the temporary paths point
//     into the folder (the test's user writes them; nothing under /var or /run);
//   - in every site, `listen 80` becomes 127.0.0.1 on a free port and the
//     `listen [::]:80` lines go (tests use 127.0.0.0/8 only).
// nginx runs in the foreground as one process (master_process off: a test
// that crashes takes it along, workers would outlive a killed master).
#pragma once

#include "FrontProxy.h"     // replaceAll
#include "HttpTestClient.h" // freeLoopbackPort, Connection

#include <QProcess>
#include <QTemporaryDir>
#include <QThread>

#include <sys/prctl.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace FloodgateTest {

inline std::string readTextFile(const std::string& path)
{
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class DebianNginx {
public:
    using Site = std::pair<std::string, std::string>;  // file name in sites-enabled, its text

    DebianNginx() = default;
    ~DebianNginx() { stop(); }
    DebianNginx(const DebianNginx&) = delete;
    DebianNginx& operator=(const DebianNginx&) = delete;

    // Starts nginx with `sites` and waits (at most 5 s) until its port
    // accepts. False with error() saying why; a port taken between choosing
    // and binding it is retried with another.
    bool start(const std::vector<Site>& sites)
    {
        if (!m_dir.isValid())
            return failed("cannot create a temporary folder: " + m_dir.errorString().toStdString());
        if (!std::filesystem::exists("/usr/sbin/nginx") || !std::filesystem::exists("/etc/nginx/nginx.conf"))
            return failed("Debian's nginx is not installed (scripts/setup installs it)");
        if (!copyDebianLayout())
            return false;
        for (int attempt = 0; attempt < 5; ++attempt) {
            m_port = freeLoopbackPort();
            for (const auto& [name, text] : sites)
                if (!writeSite(name, text))
                    return false;
            if (launch())
                return true;
            if (!m_portTaken)
                return false;
        }
        return false;
    }

    std::uint16_t port() const { return m_port; }
    const std::string& error() const { return m_error; }
    std::string path(const std::string& file) const { return m_dir.filePath(QString::fromStdString(file)).toStdString(); }
    // What it printed and logged so far (for a failure message).
    std::string output()
    {
        if (m_process)
            m_output += m_process->readAll().toStdString();
        return m_output + readTextFile(path("log/error.log"));
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
    bool failed(std::string why)
    {
        m_error = std::move(why);
        return false;
    }

    // `from` must be in `text` exactly `count` times (so the layout this
    // adapts cannot drift unnoticed), and becomes `to`.
    bool change(std::string& text, const std::string& what, const std::string& from, const std::string& to, int count = 1)
    {
        const int found = replaceAll(text, from, to);
        if (found != count)
            return failed(what + ": expected \"" + from + "\" " + std::to_string(count) + " time(s), found it " + std::to_string(found) + " time(s)");
        return true;
    }

    bool copyDebianLayout()
    {
        namespace fs = std::filesystem;
        const std::string dir = m_dir.path().toStdString();
        std::error_code ec;
        fs::create_directories(dir + "/etc");
        fs::copy("/etc/nginx", dir + "/etc/nginx", fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
        if (ec)
            return failed("cannot copy /etc/nginx: " + ec.message());
        // Debian enables its "default" site; the test puts its own copy of it
        // in (when it wants it), adapted like every other site.
        fs::remove_all(dir + "/etc/nginx/sites-enabled", ec);
        fs::create_directories(dir + "/etc/nginx/sites-enabled");
        fs::create_directories(dir + "/log");
        fs::create_directories(dir + "/tmp");

        std::string conf = readTextFile("/etc/nginx/nginx.conf");
        const std::string what = "/etc/nginx/nginx.conf";
        if (!change(conf, what, "include /etc/nginx/sites-enabled/*;", "include " + dir + "/etc/nginx/sites-enabled/*;")
            || !change(conf, what, "include /etc/nginx/conf.d/*.conf;", "include " + dir + "/etc/nginx/conf.d/*.conf;")
            || !change(conf, what, "include /etc/nginx/mime.types;", "include " + dir + "/etc/nginx/mime.types;")
            || !change(conf, what, "include /etc/nginx/modules-enabled/*.conf;", "include " + dir + "/etc/nginx/modules-enabled/*.conf;")
            || !change(conf, what, "user www-data;", "# user www-data; (the test's user runs it)")
            || !change(conf, what, "pid /run/nginx.pid;", "pid " + dir + "/nginx.pid;")
            || !change(conf, what, "error_log /var/log/nginx/error.log;", "error_log " + dir + "/log/error.log info;")
            || !change(conf, what, "access_log /var/log/nginx/access.log;", "access_log " + dir + "/log/access.log;"))
            return false;
        std::ofstream(path("etc/nginx/nginx.conf"), std::ios::trunc) << conf;
        // conf.d is included inside http { }: where the temporary paths go
        // (Debian's are under /var/lib/nginx).
        std::ofstream paths(path("etc/nginx/conf.d/test-paths.conf"), std::ios::trunc);
        for (const char* kind : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
            paths << kind << "_temp_path " << dir << "/tmp/" << kind << ";\n";
        if (!paths)
            return failed("cannot write conf.d/test-paths.conf");
        return true;
    }

    bool writeSite(const std::string& name, std::string text)
    {
        // Drop the IPv6 listen lines; then every `listen 80` is the test's port.
        std::istringstream in(text);
        std::string out, line;
        int v6 = 0;
        while (std::getline(in, line)) {
            if (line.find("listen [::]:80") != std::string::npos && line.find('#') == std::string::npos) {
                ++v6;
                continue;
            }
            out += line + "\n";
        }
        const std::string listen = "listen 127.0.0.1:" + std::to_string(m_port);
        if (v6 == 0)
            return failed(name + ": no \"listen [::]:80\" line");
        if (replaceAll(out, "listen 80", listen) == 0)
            return failed(name + ": no \"listen 80\" to put the test's port in");
        // Nothing may listen anywhere else (port 80 for real, another address).
        std::istringstream check(out);
        while (std::getline(check, line)) {
            const auto first = line.find_first_not_of(" \t");
            if (first != std::string::npos && line.compare(first, 7, "listen ") == 0 && line.compare(first, listen.size(), listen) != 0)
                return failed(name + ": a listen line the test cannot move: " + line);
        }
        std::ofstream f(path("etc/nginx/sites-enabled/" + name), std::ios::trunc);
        f << out;
        if (!f)
            return failed("cannot write sites-enabled/" + name);
        return true;
    }

    bool launch()
    {
        stop();
        m_portTaken = false;
        m_output.clear();
        std::filesystem::remove(path("log/error.log"));
        const QStringList args = {QStringLiteral("-p"), m_dir.path(), QStringLiteral("-c"), QString::fromStdString(path("etc/nginx/nginx.conf")),
                                  // Before nginx.conf is read it logs to the built-in /var/log/nginx/error.log.
                                  QStringLiteral("-e"), QString::fromStdString(path("log/error.log")),
                                  QStringLiteral("-g"), QStringLiteral("daemon off; master_process off;")};
        m_process = std::make_unique<QProcess>();
        m_process->setProcessChannelMode(QProcess::MergedChannels);
        m_process->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
        m_process->start(QStringLiteral("/usr/sbin/nginx"), args);
        if (!m_process->waitForStarted(5000))
            return failed("cannot run nginx: " + m_process->errorString().toStdString());
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (std::chrono::steady_clock::now() < deadline) {
            if (m_process->state() == QProcess::NotRunning || m_process->waitForFinished(0)) {
                const std::string out = output();
                m_portTaken = out.find("Address already in use") != std::string::npos;
                m_process.reset();
                return failed("nginx ended at start: " + out);
            }
            Connection probe;
            probe.open(m_port, "127.0.0.1");
            if (probe.isOpen())
                return true;
            QThread::msleep(20);
        }
        const std::string out = output();
        stop();
        return failed("nginx did not listen within 5 s: " + out);
    }

    QTemporaryDir m_dir;
    std::unique_ptr<QProcess> m_process;
    std::uint16_t m_port = 0;
    bool m_portTaken = false;
    std::string m_output;
    std::string m_error;
};

} // namespace FloodgateTest
