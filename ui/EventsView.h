// SPDX-License-Identifier: GPL-3.0-or-later
// The stream of refusals (what limiter.log holds), filterable, each with its
// "why": the rule, the window, the count against the limit, and how the
// client's address was derived; and the audit trail of every change.
#pragma once

#include <QWidget>

#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#endif

class QLabel;
class QLineEdit;
class QPushButton;
class QSortFilterProxyModel;
class QTabWidget;
class QTableView;
class QTextEdit;

namespace Floodgate::Ui {

class AuditModel;
class EventsModel;

class EventsView : public QWidget {
    Q_OBJECT

public:
    explicit EventsView(QWidget* parent = nullptr);
    void apply(const ConsoleSnapshot& snapshot);
    EventsModel* events() const { return m_events; }
    QTableView* eventsTable() const { return m_eventsTable; }
    QString selectedClient() const;

Q_SIGNALS:
    void showClient(const QString& address);

private:
    void updateDetail();

    EventsModel* m_events = nullptr;
    QSortFilterProxyModel* m_eventsProxy = nullptr;
    QTableView* m_eventsTable = nullptr;
    QLineEdit* m_filter = nullptr;
    QLabel* m_count = nullptr;
    QLabel* m_why = nullptr;
    QPushButton* m_show = nullptr;
    AuditModel* m_audit = nullptr;
    QSortFilterProxyModel* m_auditProxy = nullptr;
    QTableView* m_auditTable = nullptr;
    QTextEdit* m_auditDetail = nullptr;
    QTabWidget* m_tabs = nullptr;
};

} // namespace Floodgate::Ui
