// SPDX-License-Identifier: GPL-3.0-or-later
// Streams that only grow: refusals (what limiter.log holds) and the audit
// trail, appended a batch per refresh and bounded.
#pragma once

// moc cannot parse the C++20 standard headers these pull in; it only needs the class.
#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#include "ui/KeyedModel.h"
#endif

namespace Floodgate::Ui {

class EventsModel : public AppendModel<Http::Event> {
    Q_OBJECT

public:
    enum Column { Time, Action, Rule, Client, Request, Count, RetryAfter, Customer, ColumnCount };
    enum Role { SortRole = Qt::UserRole + 1, ClientRole, WhyRole };
    explicit EventsModel(QObject* parent = nullptr);
    void apply(const ConsoleSnapshot& snapshot);
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    Core::Millis m_now = 0;
};

class AuditModel : public AppendModel<Storage::AuditRow> {
    Q_OBJECT

public:
    enum Column { Time, Actor, Action, Subject, ColumnCount };
    enum Role { SortRole = Qt::UserRole + 1, DetailRole };
    explicit AuditModel(QObject* parent = nullptr);
    void apply(const ConsoleSnapshot& snapshot);
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    Core::Millis m_now = 0;
};

} // namespace Floodgate::Ui
