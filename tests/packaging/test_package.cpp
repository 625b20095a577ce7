// SPDX-License-Identifier: GPL-3.0-or-later
// The Debian package, made by CPack from this build tree into a temporary
// folder (as scripts/package does from its Release build) and checked with
// the tools Debian checks packages with: its file list; its control fields,
// the version being CMake's project(VERSION) and Depends naming the package
// of every library the binary needs (dpkg-shlibdeps computed it); lintian
// with no errors; desktop-file-validate; appstreamcli validate;
// systemd-analyze verify on the unit; man -l renders floodgate(1), which
// names every long option and command the binary's --help lists; and the
// extracted binary's --version is the project's.
#include <QtTest>

#include <QDir>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

namespace {

struct Run {
    int code = -1;
    QString out;
    QString err;
};

Run run(const QString& program, const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment(),
        int timeoutMs = 120000)
{
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program, args);
    Run r;
    if (!p.waitForStarted(5000)) {
        r.err = program + QStringLiteral(": cannot start (scripts/setup installs it)");
        return r;
    }
    p.waitForFinished(timeoutMs);
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    return r;
}

Run shell(const QString& script)
{
    return run(QStringLiteral("sh"), {QStringLiteral("-c"), script});
}

// The long options (--name) a --help text lists.
QStringList longOptions(const QString& help)
{
    QStringList names;
    static const QRegularExpression option(QStringLiteral("(?:^|[ ,])(--[a-z][a-z0-9-]*)"), QRegularExpression::MultilineOption);
    for (const QString& line : help.split(QLatin1Char('\n'))) {
        const QString head = line.trimmed();
        if (!head.startsWith(QLatin1Char('-')))
            continue;  // only the lines that declare options, not their prose
        auto it = option.globalMatch(head.section(QStringLiteral("  "), 0, 0));
        while (it.hasNext())
            names << it.next().captured(1);
    }
    names.removeDuplicates();
    return names;
}

// The names under "Subcommands:" in a --help text.
QStringList subcommands(const QString& help)
{
    QStringList names;
    const qsizetype at = help.indexOf(QStringLiteral("\nSubcommands:\n"));
    if (at < 0)
        return names;
    static const QRegularExpression name(QStringLiteral("^  ([a-z]+) "));
    for (const QString& line : help.mid(at + 14).split(QLatin1Char('\n'))) {
        if (line.isEmpty())
            break;
        if (const auto m = name.match(line); m.hasMatch())
            names << m.captured(1);
    }
    return names;
}

} // namespace

class TestPackage : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_deb;
    QString m_root;  // the package extracted

    QString extracted(const QString& path) const { return m_root + path; }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QElapsedTimer clock;
        clock.start();
        const Run cpack = run(QStringLiteral(FLOODGATE_CPACK), {QStringLiteral("-G"), QStringLiteral("DEB"), QStringLiteral("--config"),
                                                                QStringLiteral(FLOODGATE_BUILD_DIR "/CPackConfig.cmake"), QStringLiteral("-B"),
                                                                m_dir.path()});
        QVERIFY2(cpack.code == 0, qPrintable(cpack.out + cpack.err));
        const QStringList debs = QDir(m_dir.path()).entryList({QStringLiteral("floodgate_*.deb")});
        QCOMPARE(debs.size(), 1);
        m_deb = m_dir.filePath(debs.front());
        m_root = m_dir.filePath(QStringLiteral("root"));
        const Run x = run(QStringLiteral("dpkg-deb"), {QStringLiteral("-x"), m_deb, m_root});
        QVERIFY2(x.code == 0, qPrintable(x.err));
        qInfo("cpack and extraction took %lld ms", qint64(clock.elapsed()));
    }

    void theFileListIsTheDocumentedOne()
    {
        const Run list = run(QStringLiteral("dpkg-deb"), {QStringLiteral("--contents"), m_deb});
        QCOMPARE(list.code, 0);
        QStringList files;
        for (const QString& line : list.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts))
            if (!line.startsWith(QLatin1Char('d')))  // directories follow from the files
                files << line.section(QStringLiteral(" ./"), 1).prepend(QLatin1Char('/'));
        files.sort();
        const QStringList expected = {
            QStringLiteral("/etc/floodgate/floodgate.conf"),
            QStringLiteral("/etc/logrotate.d/floodgate"),
            QStringLiteral("/lib/systemd/system/floodgate.service"),
            QStringLiteral("/usr/bin/floodgate"),
            QStringLiteral("/usr/share/applications/floodgate.desktop"),
            QStringLiteral("/usr/share/doc/floodgate/CHANGELOG.md.gz"),
            QStringLiteral("/usr/share/doc/floodgate/CLI.md.gz"),
            QStringLiteral("/usr/share/doc/floodgate/CLUSTER.md.gz"),
            QStringLiteral("/usr/share/doc/floodgate/INTEGRATIONS.md.gz"),
            QStringLiteral("/usr/share/doc/floodgate/INTERFACE.md.gz"),
            QStringLiteral("/usr/share/doc/floodgate/PACKAGING.md.gz"),
            QStringLiteral("/usr/share/doc/floodgate/USER_GUIDE.md.gz"),
            QStringLiteral("/usr/share/doc/floodgate/changelog.gz"),
            QStringLiteral("/usr/share/doc/floodgate/copyright"),
            QStringLiteral("/usr/share/doc/floodgate/nginx-auth-request.conf"),
            QStringLiteral("/usr/share/icons/hicolor/scalable/apps/floodgate.svg"),
            QStringLiteral("/usr/share/man/man1/floodgate.1.gz"),
            QStringLiteral("/usr/share/metainfo/io.github.floodgate.Floodgate.metainfo.xml"),
        };
        QCOMPARE(files, expected);
        // What is under /etc is the operator's to edit: conffiles, kept on upgrade.
        const Run conffiles = run(QStringLiteral("dpkg-deb"), {QStringLiteral("--info"), m_deb, QStringLiteral("conffiles")});
        QCOMPARE(conffiles.code, 0);
        QCOMPARE(conffiles.out, QStringLiteral("/etc/floodgate/floodgate.conf\n/etc/logrotate.d/floodgate\n"));
        // Everything root's, and only the binary executable.
        for (const QString& line : list.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
            QVERIFY2(line.section(QLatin1Char(' '), 1, 1) == QStringLiteral("root/root"), qPrintable(line));
            if (!line.startsWith(QLatin1Char('d')))
                QCOMPARE(line.startsWith(QStringLiteral("-rwxr-xr-x")), line.endsWith(QStringLiteral("/usr/bin/floodgate")));
        }
    }

    void theControlFieldsCarryTheProjectsVersionAndComputedDepends()
    {
        auto field = [this](const char* name) {
            return run(QStringLiteral("dpkg-deb"), {QStringLiteral("--field"), m_deb, QLatin1String(name)}).out.trimmed();
        };
        QCOMPARE(field("Package"), QStringLiteral("floodgate"));
        QCOMPARE(field("Version"), QStringLiteral(FLOODGATE_VERSION));
        QCOMPARE(field("Architecture"), run(QStringLiteral("dpkg"), {QStringLiteral("--print-architecture")}).out.trimmed());
        QCOMPARE(field("Section"), QStringLiteral("net"));
        QVERIFY(field("Maintainer").contains(QLatin1Char('@')));
        QVERIFY(field("Description").startsWith(QStringLiteral("HTTP request throttle")));

        // Every library the binary needs is in Depends through the package
        // that holds it, with a version: what dpkg-shlibdeps writes.
        const QString depends = field("Depends");
        const Run needed = run(QStringLiteral("objdump"), {QStringLiteral("-p"), extracted(QStringLiteral("/usr/bin/floodgate"))});
        QCOMPARE(needed.code, 0);
        static const QRegularExpression neededLine(QStringLiteral("^\\s*NEEDED\\s+(\\S+)$"), QRegularExpression::MultilineOption);
        int libraries = 0;
        for (auto it = neededLine.globalMatch(needed.out); it.hasNext();) {
            const QString soname = it.next().captured(1);
            // The path the loader finds it at; dpkg knows it by that name or, merged /usr, by its real one.
            const Run owner = shell(QStringLiteral("p=$(ldconfig -p | awk '$1 == \"%1\" {print $NF; exit}'); "
                                                   "{ dpkg -S \"$p\" 2>/dev/null || dpkg -S \"$(realpath \"$p\")\"; } | head -1")
                                        .arg(soname));
            const QString package = owner.out.section(QLatin1Char(':'), 0, 0).trimmed();
            QVERIFY2(!package.isEmpty(), qPrintable(soname + QStringLiteral(": no package holds it: ") + owner.err));
            QVERIFY2(QRegularExpression(QStringLiteral("(^|, )%1 \\(>= [^)]+\\)").arg(QRegularExpression::escape(package))).match(depends).hasMatch(),
                     qPrintable(soname + QStringLiteral(" (") + package + QStringLiteral(") is not in Depends: ") + depends));
            ++libraries;
        }
        QVERIFY(libraries >= 5);  // Qt, SQLite, hiredis, zlib, the C and C++ runtimes
        QVERIFY2(depends.contains(QStringLiteral("libqt6charts6")), qPrintable(depends));
    }

    void lintianFindsNoErrors()
    {
        const Run lintian = run(QStringLiteral("lintian"), {QStringLiteral("--fail-on"), QStringLiteral("error"), m_deb});
        QVERIFY2(lintian.code == 0, qPrintable(lintian.out + lintian.err));
        QVERIFY2(!lintian.out.contains(QStringLiteral("E: ")), qPrintable(lintian.out));
    }

    void theDesktopEntryIsValidAndStartsTheConsoleWithoutArguments()
    {
        const QString desktop = extracted(QStringLiteral("/usr/share/applications/floodgate.desktop"));
        const Run v = run(QStringLiteral("desktop-file-validate"), {desktop});
        QVERIFY2(v.code == 0 && v.out.isEmpty() && v.err.isEmpty(), qPrintable(v.out + v.err));
        QFile f(desktop);
        QVERIFY(f.open(QIODevice::ReadOnly));
        // A field code (%U, %F) would pass a URL or a file, which floodgate refuses (exit 2).
        QVERIFY(QString::fromUtf8(f.readAll()).contains(QStringLiteral("\nExec=floodgate\n")));
    }

    void theMetainfoIsValid()
    {
        const QString metainfo = extracted(QStringLiteral("/usr/share/metainfo/io.github.floodgate.Floodgate.metainfo.xml"));
        const Run v = run(QStringLiteral("appstreamcli"), {QStringLiteral("validate"), QStringLiteral("--no-net"), metainfo});
        QVERIFY2(v.code == 0, qPrintable(v.out + v.err));
        QFile f(metainfo);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(QString::fromUtf8(f.readAll()).contains(QStringLiteral("<release version=\"" FLOODGATE_VERSION "\"")));
    }

    void theUnitVerifies()
    {
        // verify wants ExecStart's binary where the unit says: the extracted one.
        QFile unit(extracted(QStringLiteral("/lib/systemd/system/floodgate.service")));
        QVERIFY(unit.open(QIODevice::ReadOnly));
        QString text = QString::fromUtf8(unit.readAll());
        QVERIFY(text.contains(QStringLiteral("\nExecStart=/usr/bin/floodgate --headless\n")));
        QVERIFY(text.contains(QStringLiteral("\nStateDirectory=floodgate\n")));
        text.replace(QStringLiteral("/usr/bin/floodgate"), extracted(QStringLiteral("/usr/bin/floodgate")));
        QDir(m_dir.path()).mkdir(QStringLiteral("verify"));
        QFile copy(m_dir.filePath(QStringLiteral("verify/floodgate.service")));
        QVERIFY(copy.open(QIODevice::WriteOnly));
        copy.write(text.toUtf8());
        copy.close();
        // Documentation=man:floodgate(1) is looked up too: in the package.
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("MANPATH"), extracted(QStringLiteral("/usr/share/man")));
        const Run v = run(QStringLiteral("systemd-analyze"), {QStringLiteral("verify"), copy.fileName()}, env);
        QVERIFY2(v.code == 0 && v.err.isEmpty(), qPrintable(v.out + v.err));
    }

    void theManPageRendersAndNamesEveryOptionAndCommand()
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        // Wide and unhyphenated, so no option is broken across lines.
        env.insert(QStringLiteral("MANWIDTH"), QStringLiteral("250"));
        env.insert(QStringLiteral("MANROFFOPT"), QStringLiteral("-rHY=0"));
        env.insert(QStringLiteral("LC_ALL"), QStringLiteral("C.UTF-8"));
        const Run man = run(QStringLiteral("man"), {QStringLiteral("-l"), extracted(QStringLiteral("/usr/share/man/man1/floodgate.1.gz"))}, env);
        QVERIFY2(man.code == 0 && man.err.isEmpty(), qPrintable(man.err));
        const QString page = man.out;
        QVERIFY(page.contains(QStringLiteral("NAME")) && page.contains(QStringLiteral("EXIT STATUS")) && page.contains(QStringLiteral("FILES")));

        // The binary's own --help, and each command's and its commands'.
        QStringList missing;
        int options = 0;
        std::function<void(const QStringList&)> walk = [&](const QStringList& command) {
            const Run help = run(QStringLiteral(FLOODGATE_BINARY), QStringList(command) << QStringLiteral("--help"));
            QCOMPARE(help.code, 0);
            for (const QString& option : longOptions(help.out)) {
                ++options;
                if (!page.contains(option))
                    missing << command.join(QLatin1Char(' ')) + QLatin1Char(' ') + option;
            }
            for (const QString& sub : subcommands(help.out)) {
                // Named as the page writes a command: "lists show", "block".
                const QStringList full = QStringList(command) << sub;
                if (!page.contains(full.join(QLatin1Char(' '))))
                    missing << full.join(QLatin1Char(' '));
                walk(full);
            }
        };
        walk({});
        QVERIFY2(missing.isEmpty(), qPrintable(QStringLiteral("not in floodgate(1): ") + missing.join(QStringLiteral(", "))));
        QVERIFY(options > 30);
        for (int code = 0; code <= 5; ++code)
            QVERIFY2(page.contains(QRegularExpression(QStringLiteral("\\n {7}%1\\n").arg(code))), qPrintable(QString::number(code)));
    }

    void theExtractedBinaryIsTheProjectsVersion()
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        const Run v = run(extracted(QStringLiteral("/usr/bin/floodgate")), {QStringLiteral("--version")}, env);
        QCOMPARE(v.code, 0);
        QCOMPARE(v.out, QStringLiteral("floodgate " FLOODGATE_VERSION "\n"));
    }
};

QTEST_GUILESS_MAIN(TestPackage)
#include "test_package.moc"
