// SPDX-License-Identifier: GPL-3.0-or-later
// The tracked clients: sortable and filterable, selection and sort kept
// across refreshes; the block and safelist actions act on the selection.
#pragma once

#include <QWidget>

#ifndef Q_MOC_RUN
#include "core/AddressList.h"
#include "ui/ConsoleSnapshot.h"
#endif

class QComboBox;
class QLabel;
class QLineEdit;
class QMenu;
class QSortFilterProxyModel;
class QTableView;

namespace Floodgate::Ui {

class ClientsModel;

class ClientsView : public QWidget {
    Q_OBJECT

public:
    explicit ClientsView(QWidget* parent = nullptr);
    void apply(const ConsoleSnapshot& snapshot);

    // The counting ranges of the selected rows, read now (before any dialog
    // opens: live rows may vanish meanwhile).
    std::vector<Core::Cidr> selectedRanges() const;
    // Selects the client counted under `address` (or containing it); false when not tracked.
    bool selectAddress(const QString& address);
    void setContextActions(const QList<QAction*>& actions);
    // What the filter box holds (as if typed: the table shows the matching rows).
    void setFilter(const QString& text);

    ClientsModel* model() const { return m_model; }
    QTableView* table() const { return m_table; }
    // What the count beside the filter says, and its tooltip.
    QString countText() const;
    QString countToolTip() const;
    // The count's sentence: the tracked keys by kind, and how many clients
    // the table shows of them (`listed`: the busiest the snapshot carries;
    // `shown`: those the filter lets through).
    static QString countText(const Core::TrackedKeys& tracked, int listed, int shown, bool filtered);

Q_SIGNALS:
    void selectionChanged();
    void activated(const QString& address);  // double click: show its buckets

private:
    void fitColumns();
    void updateCount();  // from the latest snapshot's tracked keys and what the filter lets through

    ClientsModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    QTableView* m_table = nullptr;
    QLineEdit* m_filter = nullptr;
    QComboBox* m_state = nullptr;
    QLabel* m_count = nullptr;
    QMenu* m_menu = nullptr;
    int m_addressWidth = 0;  // the Client column's width from its widest text so far
    Core::TrackedKeys m_tracked;  // the latest snapshot's
};

} // namespace Floodgate::Ui
