// SPDX-License-Identifier: GPL-3.0-or-later
// The cluster's nodes as this node last heard them from Redis (its
// heartbeats), merged by name from each snapshot.
#pragma once

// moc cannot parse the C++20 standard headers these pull in; it only needs the class.
#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#include "ui/KeyedModel.h"
#endif

namespace Floodgate::Ui {

class ClusterNodesModel : public KeyedModel<Cluster::NodeStatus> {
    Q_OBJECT

public:
    enum Column { Name, Address, Heartbeat, Rate, ColumnCount };
    enum Role {
        SortRole = Qt::UserRole + 1,  // a number (or text) to sort by
        SelfRole,                     // bool: this node
        CountingRole,                 // bool: its heartbeat is recent enough for it to count
    };

    using KeyedModel<Cluster::NodeStatus>::KeyedModel;
    void apply(const ConsoleSnapshot& snapshot);

    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

protected:
    QString keyOf(const Cluster::NodeStatus& row) const override;

private:
    Core::Millis m_now = 0;
    bool m_stale = false;  // Redis is down: the list is the last one heard
};

} // namespace Floodgate::Ui
