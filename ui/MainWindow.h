// SPDX-License-Identifier: GPL-3.0-or-later
// The console window: navigation between the views, the toolbar (ToolBar:
// listener, dry run, demo traffic, block and safelist, find), the status bar
// (StatusBar: mode, requests and refusals per second, tracked clients,
// with --redis the cluster's indicator and its window, database), the notice and problem strips, and what the actions
// (WindowActions) do. It pulls a snapshot about four times a second; the
// views never hear from the request path.
#pragma once

#include <QMainWindow>

#include <array>
#include <memory>

#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#endif

class QListWidget;
class QStackedWidget;

namespace Floodgate::Ui {

class BucketsView;
class ClientsView;
class ClusterDialog;
class Console;
class EventsView;
class ListsView;
class NoticeBar;
class Operations;
class RulesView;
class StatusBar;
class TiersView;
class ToolBar;
class TrafficView;
class WindowActions;

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    enum View { Traffic, Clients, Buckets, Lists, Tiers, Rules, Events, ViewCount };

    explicit MainWindow(Console& console, QWidget* parent = nullptr);
    ~MainWindow() override;
    // The size the window opens at the first time, on a screen whose
    // available area is `available`.
    static QSize initialSize(const QSize& available);

    void showView(int view);
    int currentView() const;

    TrafficView* traffic() const { return m_traffic; }
    ClientsView* clients() const { return m_clients; }
    BucketsView* buckets() const { return m_buckets; }
    ListsView* lists() const { return m_lists; }
    TiersView* tiers() const { return m_tiers; }
    RulesView* rules() const { return m_rules; }
    EventsView* events() const { return m_events; }
    NoticeBar* notice() const { return m_notice; }
    NoticeBar* problem() const { return m_problem; }
    StatusBar* status() const { return m_status; }
    // The Cluster window (with --redis; made when first opened, else null).
    ClusterDialog* clusterDialog() const { return m_clusterDialog; }
    const WindowActions& actions() const { return *m_actions; }
    // GUI-thread time spent applying the last snapshot (the refresh tick).
    qint64 lastApplyNanoseconds() const { return m_lastApplyNs; }

public Q_SLOTS:
    void applySnapshot(Floodgate::Ui::SnapshotPtr snapshot);
    void find(const QString& address);
    // Opens the Cluster window (the status bar's indicator does).
    void showCluster();
    // The version and the license (the toolbar's About).
    void showAbout();

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void connectActions();
    void showProblems(const ConsoleSnapshot& s);
    std::vector<Core::Cidr> selectedRanges() const;
    void blockSelected(Core::Millis ttlMs);
    void blockCustom();
    void applyTo(int view, const SnapshotPtr& snapshot);

    Console& m_console;
    Operations* m_operations = nullptr;
    QListWidget* m_nav = nullptr;
    QStackedWidget* m_stack = nullptr;
    NoticeBar* m_notice = nullptr;
    NoticeBar* m_problem = nullptr;
    TrafficView* m_traffic = nullptr;
    ClientsView* m_clients = nullptr;
    BucketsView* m_buckets = nullptr;
    ListsView* m_lists = nullptr;
    TiersView* m_tiers = nullptr;
    RulesView* m_rules = nullptr;
    EventsView* m_events = nullptr;
    std::unique_ptr<WindowActions> m_actions;  // the QActions themselves are this window's children
    ToolBar* m_toolBar = nullptr;
    StatusBar* m_status = nullptr;
    ClusterDialog* m_clusterDialog = nullptr;
    std::array<SnapshotPtr, ViewCount> m_appliedTo{};  // the snapshot each view last saw (held, so never mistaken for a new one)
    qint64 m_lastApplyNs = 0;
    bool m_wasListening = true;
    std::uint64_t m_shownProblem = 0;     // the store problem last shown (its serial)
    std::uint64_t m_shownLogProblem = 0;  // the limiter.log problem last shown
};

} // namespace Floodgate::Ui
