// SPDX-License-Identifier: GPL-3.0-or-later
// The Cluster window, opened from the status bar's indicator (only with
// --redis): Redis's state and what it means here, the round trip, the sync
// lag, the clock offset, the breaker, the errors and the last one, and the
// nodes this node hears through Redis. Every figure says what it is in its
// tooltip. Non-modal; it takes each snapshot while it is shown.
#pragma once

#include <QDialog>

#include <array>

#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#endif

class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace Floodgate::Ui {

class ClusterNodesModel;

class ClusterDialog : public QDialog {
    Q_OBJECT

public:
    enum Figure { State, RoundTrip, SyncLag, ClockOffset, Breaker, Errors, LastError, Reports, Waits, Overdrafts, FigureCount };

    explicit ClusterDialog(QWidget* parent = nullptr);
    void apply(const ConsoleSnapshot& snapshot);
    // As tall as what it shows now (when first opened: the nodes table fits its rows).
    void fitToContents();

    // What a figure says now (its value, not its caption; State: the heading's "Redis up").
    QString figure(Figure f) const;
    QString heading() const;   // "Redis up" and where, this node
    QString whenDown() const;  // what happens while Redis is out of reach
    // Changes that never reached the cluster (ClusterText::droppedChanges):
    // the warning shown, empty while it is hidden (none dropped).
    QString droppedChanges() const;
    // Changes from Redis refused here, a levelling refused (ClusterText::sharedProblems).
    QString sharedProblems() const;
    ClusterNodesModel* nodes() const { return m_nodes; }

private:
    QLabel* m_dot = nullptr;
    QLabel* m_state = nullptr;
    QLabel* m_where = nullptr;
    QLabel* m_whenDown = nullptr;
    QLabel* m_stale = nullptr;
    QLabel* m_dropped = nullptr;
    QLabel* m_shared = nullptr;
    std::array<QLabel*, FigureCount> m_values{};
    QString m_lastErrorFull;
    ClusterNodesModel* m_nodes = nullptr;
    QSortFilterProxyModel* m_sorted = nullptr;
    QTableView* m_table = nullptr;
};

} // namespace Floodgate::Ui
