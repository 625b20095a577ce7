// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/ConsoleApp.h"

#include "cluster/ClusterSync.h"

#include "ui/BucketsView.h"
#include "ui/ClientsView.h"
#include "ui/ClusterDialog.h"
#include "ui/Console.h"
#include "core/Engine.h"
#include "core/Printable.h"
#include "ui/EventsView.h"
#include "http/LimiterLog.h"
#include "ui/LevelsEditor.h"
#include "ui/MainWindow.h"
#include "ui/RulesView.h"
#include "ui/TryLogDialog.h"
#include "http/RequestSamples.h"
#include "app/Runtime.h"
#include "storage/Store.h"
#include "floodgate/Version.h"

#include <QApplication>
#include <QDir>
#include <QEventLoop>
#include <QSpinBox>
#include <QTableWidget>
#include <QSocketNotifier>
#include <QGuiApplication>
#include <QMessageBox>
#include <QPainter>
#include <QTableView>
#include <QPalette>
#include <QStyle>
#include <QTimer>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace Floodgate::App {

namespace {


// SIGTERM (a logout, `systemctl stop`, `kill`) and SIGINT close the console
// as its window's close button does, so the runtime stops in order (listener,
// queued writes, limiter.log) and the exit code is 0, not 143. The standard
// Qt pattern: a signal handler may only write to a descriptor; a notifier
// reads it on the GUI thread. A second signal ends the process at once.
// SIGHUP reloads, as in headless mode (Runtime::reload), on the GUI thread too.
int g_signalPipe[2] = {-1, -1};

void onStopSignal(int signal)
{
    const int saved = errno;
    const unsigned char byte = static_cast<unsigned char>(signal);
    [[maybe_unused]] const auto n = ::write(g_signalPipe[1], &byte, 1);
    errno = saved;
}

class StopSignals {
public:
    StopSignals()
    {
        if (::pipe2(g_signalPipe, O_CLOEXEC | O_NONBLOCK) != 0) {
            std::fprintf(stderr, "floodgate: cannot watch for SIGTERM (%s): it will end the console without a clean stop\n",
                         std::strerror(errno));
            return;
        }
        struct sigaction sa {};
        sa.sa_handler = onStopSignal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        ::sigaction(SIGTERM, &sa, nullptr);
        ::sigaction(SIGINT, &sa, nullptr);
        ::sigaction(SIGHUP, &sa, nullptr);
        m_notifier = std::make_unique<QSocketNotifier>(g_signalPipe[0], QSocketNotifier::Read);
        QObject::connect(m_notifier.get(), &QSocketNotifier::activated, m_notifier.get(), [this] {
            unsigned char byte = 0;
            if (::read(g_signalPipe[0], &byte, 1) != 1)
                return;
            if (byte == SIGHUP) {
                if (m_onHangUp)
                    m_onHangUp();
                else
                    std::fprintf(stderr, "floodgate: SIGHUP received while starting: nothing to reload yet\n");
                return;
            }
            ::signal(SIGTERM, SIG_DFL);
            ::signal(SIGINT, SIG_DFL);
            std::fprintf(stderr, "floodgate: %s received, closing\n", byte == SIGINT ? "SIGINT" : "SIGTERM");
            // Every window, dialogs included (a dialog left open would keep
            // the application running): the main window's close is the
            // last one, and the event loop ends as on the close button.
            QApplication::closeAllWindows();
        });
    }
    ~StopSignals()
    {
        if (!m_notifier)
            return;
        m_notifier.reset();
        ::signal(SIGTERM, SIG_DFL);
        ::signal(SIGINT, SIG_DFL);
        ::signal(SIGHUP, SIG_DFL);
        ::close(g_signalPipe[0]);
        ::close(g_signalPipe[1]);
        g_signalPipe[0] = g_signalPipe[1] = -1;
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;
    // What SIGHUP does once the runtime is up.
    void onHangUp(std::function<void()> reload) { m_onHangUp = std::move(reload); }

private:
    std::unique_ptr<QSocketNotifier> m_notifier;
    std::function<void()> m_onHangUp;
};

// Under the offscreen or minimal platforms (tests, CI) nobody can click a
// dialog away: the reason goes to stderr only.
bool canShowDialogs()
{
    const QString platform = QGuiApplication::platformName();
    return platform != QStringLiteral("offscreen") && platform != QStringLiteral("minimal");
}

void saveScreenshot(const QPixmap& shot, const QString& path)
{
    if (!shot.save(path))
        std::fprintf(stderr, "floodgate: cannot write %s\n", path.toLocal8Bit().constData());
    else
        std::printf("screenshot %s\n", path.toLocal8Bit().constData());
}

// The main window with a dialog over it, as one picture: there is no
// window manager under Xvfb, so the dialog is drawn onto the window's image
// with a frame and a soft shadow of its own.
QPixmap grabWithDialog(QWidget& window, QWidget& dialog)
{
    QPixmap shot = window.grab();
    const QPixmap pane = dialog.grab();
    const QPoint at = dialog.geometry().topLeft() - window.geometry().topLeft();
    QPainter p(&shot);
    p.setRenderHint(QPainter::Antialiasing);
    for (int i = 12; i > 0; --i) {
        p.setPen(Qt::NoPen);
        p.setBrush(QColor(0, 0, 0, 5));
        p.drawRoundedRect(QRectF(at.x() - i + 4, at.y() - i + 8, pane.width() / pane.devicePixelRatio() + 2 * i - 8,
                                 pane.height() / pane.devicePixelRatio() + 2 * i - 8),
                          i, i);
    }
    p.drawPixmap(at, pane);
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(QApplication::palette().color(QPalette::Mid), 1));
    p.drawRect(QRectF(at, pane.size() / pane.devicePixelRatio()).adjusted(-0.5, -0.5, 0.5, 0.5));
    p.end();
    return shot;
}

// With --redis: the Cluster window over the clients view (the demo's API
// customers, whom scripts/screenshots also sends to another node: the
// cluster's count beside "This node"; the status bar's indicator), as one
// picture (grabWithDialog).
void saveClusterScreenshot(Ui::MainWindow& window, Ui::Console& console, const QString& dir)
{
    window.showView(Ui::MainWindow::Clients);
    window.clients()->setFilter(QStringLiteral("192.0.2."));
    console.refreshNow();
    window.showCluster();
    Ui::ClusterDialog* dialog = window.clusterDialog();
    if (!dialog)
        return;
    QApplication::processEvents();
    // Below the table's rows, so they stay in sight (as high as it fits).
    const QTableView* table = window.clients()->table();
    const int rows = table->model()->rowCount();
    const QRect last = rows ? table->visualRect(table->model()->index(rows - 1, 0)) : QRect();
    const QPoint under = table->viewport()->mapTo(&window, rows ? last.bottomLeft() : QPoint(0, 0));
    const int y = std::min(under.y() + 24, window.height() - dialog->height() - 40);
    dialog->move(window.geometry().topLeft() + QPoint(table->mapTo(&window, QPoint(0, 0)).x() + 24, std::max(60, y)));
    QApplication::processEvents();
    console.refreshNow();  // again, now that it is laid out (the last error is elided to its width)
    QApplication::processEvents();
    const QPixmap shot = grabWithDialog(window, *dialog);
    const QString path = QStringLiteral("%1/08-cluster.png").arg(dir);
    saveScreenshot(shot, path);
}

// --screenshot-log FILE: the Rules view with the per-IP levels edited (the
// burst level raised from 6 to 10 in 3 s, the 5-minute level lowered from
// 300 to 200) and not applied, and "Try on a log..." over it, replayed.
void saveTryOnLogScreenshot(Ui::MainWindow& window, const QString& dir, const QString& log)
{
    window.showView(Ui::MainWindow::Rules);
    Ui::RulesView* rules = window.rules();
    auto* levels = rules->findChild<Ui::LevelsEditor*>();
    auto* table = levels ? levels->findChild<QTableWidget*>() : nullptr;
    if (!table || table->rowCount() < 2) {
        std::fprintf(stderr, "floodgate: --screenshot-log: the per-IP levels are not the defaults' three\n");
        return;
    }
    for (const auto& [row, limit] : {std::pair{0, 10}, std::pair{1, 200}})
        if (auto* spin = qobject_cast<QSpinBox*>(table->cellWidget(row, 0)))
            spin->setValue(limit);
    rules->tryOnLog();
    Ui::TryLogDialog* dialog = rules->tryLogDialog();
    if (!dialog)
        return;
    dialog->resize(std::min(1240, window.width() - 60), std::min(600, window.height() - 110));
    QEventLoop loop;
    QObject::connect(dialog, &Ui::TryLogDialog::replayEnded, &loop, &QEventLoop::quit);
    dialog->setFiles({log});
    if (dialog->running())
        loop.exec();
    dialog->move(window.geometry().topLeft() + QPoint((window.width() - dialog->width()) / 2, 70));
    QApplication::processEvents();
    saveScreenshot(grabWithDialog(window, *dialog), QStringLiteral("%1/09-try-on-a-log.png").arg(dir));
    dialog->close();
}

// --screenshots DIR: each view saved as a PNG after the demo has run a while
// (and with --redis, the Cluster window).
void scheduleScreenshots(Ui::MainWindow& window, Ui::Console& console, const Options& o)
{
    QTimer::singleShot(int(o.screenshotDelaySeconds * 1000), &window, [&window, &console, dir = QString::fromStdString(o.screenshots),
                                                                         log = QString::fromStdString(o.screenshotLog)] {
        QDir().mkpath(dir);
        const char* names[] = {"traffic", "clients", "buckets", "lists", "tiers", "rules", "events"};
        for (int v = 0; v < Ui::MainWindow::ViewCount; ++v) {
            window.showView(v);
            if (v == Ui::MainWindow::Buckets) {
                // The busiest client that is being counted (a blocked one spends no counters).
                for (const Ui::ClientRow& c : console.latest()->clients) {
                    if (c.summary.state == Core::ClientState::Ok || c.summary.state == Core::ClientState::Throttled) {
                        window.buckets()->follow(QString::fromStdString(c.summary.keyText()));
                        break;
                    }
                }
            }
            console.refreshNow();
            if (v == Ui::MainWindow::Events) {
                // A refusal selected, so the picture shows its "why".
                QTableView* events = window.events()->eventsTable();
                if (events->model()->rowCount() > 0)
                    events->setCurrentIndex(events->model()->index(0, 0));
            }
            QApplication::processEvents();
            saveScreenshot(window.grab(), QStringLiteral("%1/%2-%3.png").arg(dir).arg(v + 1, 2, 10, QLatin1Char('0')).arg(QLatin1String(names[v])));
        }
        if (console.latest()->cluster)
            saveClusterScreenshot(window, console, dir);
        if (!log.isEmpty())
            saveTryOnLogScreenshot(window, dir, log);
        std::fflush(stdout);
        QApplication::quit();
    });
}

void applyTheme(const std::string& theme)
{
    if (theme == "system")
        return;
    QApplication::setStyle(QStringLiteral("Fusion"));
    if (theme == "light") {
        QApplication::setPalette(QApplication::style()->standardPalette());
        return;
    }
    QPalette p;
    const QColor window(0x2b, 0x2f, 0x33), base(0x20, 0x23, 0x26), text(0xe8, 0xea, 0xed), disabled(0x80, 0x86, 0x8b);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(0xff, 0x8a, 0x80));
    p.setColor(QPalette::Highlight, QColor(0x3d, 0x7d, 0xd8));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x8a, 0xb4, 0xf8));
    p.setColor(QPalette::PlaceholderText, disabled);
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, disabled);
    QApplication::setPalette(p);
}

} // namespace

Ui::ConsoleServices consoleServices(Runtime& runtime, const Options& o)
{
    Ui::ConsoleServices s;
    s.engine = &runtime.engine();
    s.store = &runtime.store();
    s.log = &runtime.log();
    s.samples = &runtime.samples();
    s.clock = &runtime.clock();
    s.setDemo = [&runtime](bool on) { runtime.setDemo(on); };
    s.demoRunning = [&runtime] { return runtime.demoRunning(); };
    s.setListening = [&runtime](bool on, std::string* why) { return runtime.setListening(on, why); };
    s.listening = [&runtime] { return runtime.listening(); };
    s.listenUrl = [&runtime] { return runtime.listenUrl(); };
    if (Cluster::ClusterSync* sync = runtime.cluster())
        s.clusterStatus = [sync] { return sync->status(); };
    s.modeText = runtime.modeText();
    s.adminUrl = runtime.adminUrl();
    s.adminBeyondLoopback = runtime.adminBeyondLoopback();
    s.databasePath = runtime.databasePath();
    s.logPath = runtime.logPath();
    s.dryRunForced = o.dryRun;
    return s;
}

ExitCode runConsole(const Options& o, int argc, char** argv)
{
    // No display to open a window on (an ssh session, a server): Qt would
    // abort with "Reinstalling the application may fix this problem".
    // Say what is wrong instead, before Qt is asked.
    const char* platform = std::getenv("QT_QPA_PLATFORM");
    const bool drawsOnAScreen = !platform || !*platform || std::string_view(platform).starts_with("xcb") || std::string_view(platform).starts_with("wayland");
    const auto set = [](const char* name) { const char* v = std::getenv(name); return v && *v; };
    if (drawsOnAScreen && !set("DISPLAY") && !set("WAYLAND_DISPLAY")) {
        std::fprintf(stderr, "floodgate: no display to open the console on (DISPLAY and WAYLAND_DISPLAY are not set): run it in a desktop "
                             "session, or `floodgate --headless` to serve without a window\n");
        return ExitCode::BadInput;
    }
    // The command line as given, for SIGHUP to parse again (QApplication
    // may take its own arguments out of argv).
    std::vector<std::string> words(argv, argv + argc);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Floodgate"));
    QApplication::setApplicationName(QStringLiteral("Floodgate"));
    QApplication::setApplicationVersion(QLatin1String(Version));
    // The window's title is "Floodgate VERSION"; the same display name keeps Qt from appending " — Floodgate" to it.
    QApplication::setApplicationDisplayName(QStringLiteral("Floodgate %1").arg(QLatin1String(Version)));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/floodgate.svg")));
    QApplication::setDesktopFileName(QStringLiteral("floodgate"));
    applyTheme(o.theme);
    // Before anything starts: a signal during start-up closes the window as soon as it is up.
    StopSignals stopSignals;

    const Core::SystemClock clock;
    Runtime runtime(clock);
    if (auto failure = runtime.start(o)) {
        std::fprintf(stderr, "floodgate: %s\n", Core::printable(failure->message).c_str());
        if (canShowDialogs())
            QMessageBox::critical(nullptr, QObject::tr("Floodgate cannot start"), QString::fromStdString(failure->message));
        return failure->exitCode;
    }
    runtime.printStartLines();
    stopSignals.onHangUp([&runtime, &words] {
        std::vector<char*> args;
        for (std::string& w : words)
            args.push_back(w.data());
        reloadOnSignal(runtime, int(args.size()), args.data());
    });
    {
        Ui::Console console(consoleServices(runtime, o));
        Ui::MainWindow window(console);
        if (o.windowWidth > 0)
            window.resize(o.windowWidth, o.windowHeight);
        window.show();
        console.refreshNow();
        console.startUpdates();
        if (o.seconds > 0)
            QTimer::singleShot(int(o.seconds * 1000), &window, &QWidget::close);
        if (!o.screenshots.empty())
            scheduleScreenshots(window, console, o);
        // Only quit() ends the loop (the window closed, --seconds, the
        // screenshots, a stop signal): exit code 0.
        app.exec();
    }
    // The window and its snapshot thread are gone; now the runtime stops in order.
    runtime.stop();
    return ExitCode::Done;
}

} // namespace Floodgate::App
