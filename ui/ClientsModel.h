// SPDX-License-Identifier: GPL-3.0-or-later
// The tracked clients, merged by counting key from each snapshot.
#pragma once

// moc cannot parse the C++20 standard headers these pull in; it only needs the class.
#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#include "ui/KeyedModel.h"
#endif

namespace Floodgate::Ui {

class ClientsModel : public KeyedModel<ClientRow> {
    Q_OBJECT

public:
    // Here: with --redis, this node's share of the binding level's count
    // (Use shows the cluster's, which the limit is judged on); the view
    // hides it on a single node.
    enum Column { Address, Last3s, Last60s, Rate, Activity, Use, Here, State, Customer, Request, UserAgent, ColumnCount };
    enum Role {
        SortRole = Qt::UserRole + 1,  // a number (or text) to sort by
        KeyRole,                      // the counting range as text ("2001:db8:1::/64")
        LiveRole,                     // QList<int>: the 19 whole live buckets, oldest first (sparkline; not the one still filling)
        UsedRole,                     // binding level: used
        LimitRole,                    // binding level: limit
        StateRole,                    // int(Core::ClientState)
    };

    explicit ClientsModel(QObject* parent = nullptr);
    void apply(const ConsoleSnapshot& snapshot);

    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    // The last snapshot came from a node of a cluster.
    bool clustered() const { return m_clustered; }

protected:
    QString keyOf(const ClientRow& row) const override;

private:
    Core::Millis m_now = 0;
    bool m_clustered = false;
};

} // namespace Floodgate::Ui
