// SPDX-License-Identifier: GPL-3.0-or-later
// Customer tiers and customers, from the published configuration, with each
// customer's current use of each of its levels.
#pragma once

// moc cannot parse the C++20 standard headers these pull in; it only needs the class.
#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#include "ui/KeyedModel.h"
#endif

namespace Floodgate::Ui {

struct TierRow {
    Core::Tier tier;
    int customers = 0;
};

class TiersModel : public KeyedModel<TierRow> {
    Q_OBJECT

public:
    enum Column { Name, Levels, Customers, ColumnCount };
    using KeyedModel<TierRow>::KeyedModel;
    void apply(const ConsoleSnapshot& snapshot);
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    // "100 / min + 5,000 / h"
    static QString describe(const std::vector<Core::Level>& levels);

protected:
    QString keyOf(const TierRow& row) const override;
};

struct CustomerRow {
    Core::Customer customer;
    std::vector<Core::LevelUsage> usage;  // effective levels (tier + overrides) and their use
};

class CustomersModel : public KeyedModel<CustomerRow> {
    Q_OBJECT

public:
    enum Column { Id, Name, Tier, Overrides, Keys, Use, ColumnCount };
    enum Role { UsedRole = Qt::UserRole + 1, LimitRole };
    using KeyedModel<CustomerRow>::KeyedModel;
    void apply(const ConsoleSnapshot& snapshot);
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

protected:
    QString keyOf(const CustomerRow& row) const override;

private:
    QVariant keysData(const Core::Customer& customer, int role) const;
    bool m_clustered = false;  // with --redis: the use is the cluster's, this node's share in the tooltip
    Core::CustomerAuth m_auth = Core::CustomerAuth::ApiKey;
    Core::Millis m_now = 0;
};

} // namespace Floodgate::Ui
