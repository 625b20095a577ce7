// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/TierModels.h"

#include "ui/ClusterText.h"
#include "ui/Format.h"
#include "ui/Theme.h"

#include <QLocale>

namespace Floodgate::Ui {

namespace {

// The level with the least left: the one a customer meets first.
const Core::LevelUsage* binding(const std::vector<Core::LevelUsage>& usage)
{
    const Core::LevelUsage* best = nullptr;
    for (const auto& u : usage)
        if (!best || u.remaining < best->remaining)
            best = &u;
    return best;
}

} // namespace

QString TiersModel::describe(const std::vector<Core::Level>& levels)
{
    QStringList parts;
    for (const Core::Level& l : levels)
        parts << QStringLiteral("%1 / %2").arg(QLocale().toString(l.limit), formatDuration(l.periodMs, Span::Per));
    return parts.join(QStringLiteral(" + "));
}

QString TiersModel::keyOf(const TierRow& row) const
{
    return qs(row.tier.name);
}

void TiersModel::apply(const ConsoleSnapshot& s)
{
    std::vector<TierRow> next;
    for (const Core::Tier& t : s.config->tiers) {
        TierRow r{t, 0};
        for (const Core::Customer& c : s.config->customers)
            r.customers += c.tier == t.name;
        next.push_back(std::move(r));
    }
    merge(std::move(next));
}

int TiersModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant TiersModel::data(const QModelIndex& index, int role) const
{
    const TierRow* row = rowAt(index.row());
    if (!row || role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Name: return qs(row->tier.name);
    case Levels: return describe(row->tier.levels);
    case Customers: return row->customers;
    }
    return {};
}

QVariant TiersModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Name: return tr("Tier");
    case Levels: return tr("Limits");
    case Customers: return tr("Customers");
    }
    return {};
}

QString CustomersModel::keyOf(const CustomerRow& row) const
{
    return qs(row.customer.id);
}

void CustomersModel::apply(const ConsoleSnapshot& s)
{
    m_clustered = s.cluster.has_value();
    m_auth = s.config->settings.customerAuth;
    m_now = s.now;
    std::vector<CustomerRow> next;
    for (const Core::Customer& c : s.config->customers) {
        CustomerRow r{c, {}};
        if (auto it = s.customerUsage.find(c.id); it != s.customerUsage.end())
            r.usage = it->second;
        next.push_back(std::move(r));
    }
    merge(std::move(next));
}

int CustomersModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant CustomersModel::data(const QModelIndex& index, int role) const
{
    const CustomerRow* row = rowAt(index.row());
    if (!row)
        return {};
    const Core::LevelUsage* b = binding(row->usage);
    if (index.column() == Use) {
        if (role == UsedRole)
            return b ? b->used : 0u;
        if (role == LimitRole)
            return b ? b->limit : 0u;
        if (role == Qt::DisplayRole) {
            // Every level: "97 / 100 per min · 97 / 5,000 per h"; the bar is the one with the least left.
            QStringList parts;
            for (const auto& u : row->usage)
                parts << QStringLiteral("%1 / %2 per %3").arg(QLocale().toString(u.used), QLocale().toString(u.limit), formatDuration(u.periodMs, Span::Per));
            return parts.join(QStringLiteral("  ·  "));
        }
        if (role == Qt::ToolTipRole) {
            QStringList lines;
            for (const auto& u : row->usage) {
                const QString window = m_clustered ? tr("window by the whole cluster (%1)").arg(ClusterText::hereAndCluster(u.usedHere, u.used))
                                                   : tr("window");
                lines << tr("%1: %2 of %3 used in its %4 %5, %6 left, whole again in %7")
                             .arg(qs(u.name))
                             .arg(u.used)
                             .arg(u.limit)
                             .arg(formatDuration(u.periodMs, Span::Length), window)
                             .arg(u.remaining)
                             .arg(formatDuration(u.resetMs, Span::Left));
            }
            if (m_clustered)
                lines << tr("Each limit is judged on the cluster's count: every node's requests together.");
            return lines.join(QLatin1Char('\n'));
        }
        return {};
    }
    if (index.column() == Keys)
        return keysData(row->customer, role);
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Id: return qs(row->customer.id);
    case Name: return qs(row->customer.name);
    case Tier: return qs(row->customer.tier);
    case Overrides: return TiersModel::describe(row->customer.overrides);
    }
    return {};
}

// The keys column: which keys prove this customer, and what becomes of its
// requests when none does.
QVariant CustomersModel::keysData(const Core::Customer& c, int role) const
{
    QStringList valid, lines;
    for (const Core::CustomerKey& k : c.keys) {
        const bool expired = k.expiresAt != 0 && k.expiresAt <= m_now;
        if (!expired)
            valid << qs(k.id) + QStringLiteral("…");
        lines << tr("%1…  made %2%3")
                     .arg(qs(k.id), formatClock(k.createdAt, m_now),
                          k.expiresAt == 0 ? QString()
                          : expired        ? tr(", expired")
                                           : tr(", valid %1 more (rotated out)").arg(formatDuration(k.expiresAt - m_now, Span::Left)));
    }
    const bool keysProve = m_auth != Core::CustomerAuth::TrustedHeader;
    const bool unproven = valid.isEmpty() && m_auth == Core::CustomerAuth::ApiKey;
    if (role == Qt::DisplayRole) {
        if (unproven)
            return tr("none: counted as anonymous");
        return valid.isEmpty() ? tr("none") : valid.join(QStringLiteral(", "));
    }
    if (role == Qt::ForegroundRole && unproven)
        return Theme::action(Core::Action::Throttle);
    if (role == Qt::ToolTipRole) {
        lines.prepend(keysProve ? tr("The customer proves who it is by sending one of these keys. Only each key's SHA-256 is stored; "
                                     "\"New key…\" makes one and shows it once.")
                                : tr("customer_auth is trusted_header: keys prove nothing, a trusted proxy names the customer."));
        if (unproven)
            lines << tr("No valid key: its requests are counted per address, like anyone's, until it has one.");
        return lines.join(QLatin1Char('\n'));
    }
    return {};
}

QVariant CustomersModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Id: return tr("Customer id");
    case Name: return tr("Name");
    case Tier: return tr("Tier");
    case Overrides: return tr("Overrides");
    case Keys: return tr("API keys");
    case Use: return tr("Use now, every level (the bar: the one with the least left)");
    }
    return {};
}

} // namespace Floodgate::Ui
