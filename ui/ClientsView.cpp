// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/ClientsView.h"

#include "ui/ClientsModel.h"
#include "ui/Delegates.h"
#include "ui/Format.h"
#include "ui/Theme.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

namespace Floodgate::Ui {

namespace {

// Text filter over address, customer, last request and user agent, plus a
// state filter.
class ClientsFilter : public QSortFilterProxyModel {
public:
    using QSortFilterProxyModel::QSortFilterProxyModel;
    int state = -1;  // -1: any
    QString needle;  // plain text, not a pattern
    void setState(int s)
    {
        state = s;
        invalidateFilter();
    }
    void setNeedle(const QString& n)
    {
        needle = n;
        invalidateFilter();
    }

protected:
    bool filterAcceptsRow(int row, const QModelIndex& parent) const override
    {
        const QAbstractItemModel* m = sourceModel();
        if (state >= 0 && m->index(row, 0, parent).data(ClientsModel::StateRole).toInt() != state)
            return false;
        if (needle.isEmpty())
            return true;
        for (int c : {int(ClientsModel::Address), int(ClientsModel::Customer), int(ClientsModel::Request), int(ClientsModel::UserAgent)})
            if (m->index(row, c, parent).data().toString().contains(needle, Qt::CaseInsensitive))
                return true;
        return false;
    }
};

} // namespace

ClientsView::ClientsView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(12, 12, 12, 12);
    auto* bar = new QHBoxLayout;
    m_filter = new QLineEdit;
    m_filter->setPlaceholderText(tr("Filter by address, customer, path or user agent"));
    m_filter->setClearButtonEnabled(true);
    m_state = new QComboBox;
    m_state->addItem(tr("Every state"), -1);
    m_state->addItem(tr("Throttled"), int(Core::ClientState::Throttled));
    m_state->addItem(tr("Blocked"), int(Core::ClientState::Blocked));
    m_state->addItem(tr("Safelisted"), int(Core::ClientState::Safelisted));
    m_state->addItem(tr("Ok"), int(Core::ClientState::Ok));
    m_count = new QLabel;
    m_count->setFixedSize(200, m_count->sizeHint().height());  // fixed: a new count repaints the label, not the page
    m_count->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    bar->addWidget(m_filter, 1);
    bar->addWidget(m_state);
    bar->addWidget(m_count);
    layout->addLayout(bar);

    m_model = new ClientsModel(this);
    auto* proxy = new ClientsFilter(this);
    m_proxy = proxy;
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(ClientsModel::SortRole);
    m_proxy->setDynamicSortFilter(true);
    m_table = new QTableView;
    m_table->setModel(m_proxy);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(ClientsModel::Rate, Qt::DescendingOrder);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->setAlternatingRowColors(true);
    m_table->setWordWrap(false);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(26);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setItemDelegateForColumn(ClientsModel::Use, new UsageBarDelegate(ClientsModel::UsedRole, ClientsModel::LimitRole, this));
    m_table->setItemDelegateForColumn(ClientsModel::Activity, new SparklineDelegate(ClientsModel::LiveRole, this));
    m_table->setContextMenuPolicy(Qt::CustomContextMenu);
    // Address, 3 s, 60 s, rate, last minute, binding limit, this node's share, state, customer, last request (user agent stretches).
    const std::array<int, ClientsModel::ColumnCount> widths = {250, 44, 52, 62, 104, 170, 76, 124, 80, 160, 120};
    for (int c = 0; c < ClientsModel::ColumnCount; ++c)
        m_table->setColumnWidth(c, widths[std::size_t(c)]);
    m_table->setColumnHidden(ClientsModel::Here, true);  // shown on a node of a cluster
    layout->addWidget(m_table);

    connect(m_filter, &QLineEdit::textChanged, this, [proxy](const QString& t) { proxy->setNeedle(t.trimmed()); });
    connect(m_state, &QComboBox::currentIndexChanged, this, [this, proxy] { proxy->setState(m_state->currentData().toInt()); });
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &ClientsView::selectionChanged);
    connect(m_table, &QTableView::doubleClicked, this, [this](const QModelIndex& i) {
        Q_EMIT activated(i.sibling(i.row(), 0).data(ClientsModel::KeyRole).toString());
    });
    m_menu = new QMenu(this);
    connect(m_table, &QTableView::customContextMenuRequested, this, [this](const QPoint& pos) {
        if (m_table->indexAt(pos).isValid() && !m_menu->isEmpty())
            m_menu->popup(m_table->viewport()->mapToGlobal(pos));
    });
}

void ClientsView::setContextActions(const QList<QAction*>& actions)
{
    m_menu->clear();
    for (QAction* a : actions) {
        if (a)
            m_menu->addAction(a);
        else
            m_menu->addSeparator();
    }
}

void ClientsView::setFilter(const QString& text)
{
    m_filter->setText(text);
}

void ClientsView::apply(const ConsoleSnapshot& s)
{
    m_model->apply(s);
    if (m_table->isColumnHidden(ClientsModel::Here) == m_model->clustered())
        m_table->setColumnHidden(ClientsModel::Here, !m_model->clustered());
    m_count->setText(tr("%1 tracked, %2 shown").arg(formatCount(s.counters.trackedKeys)).arg(m_proxy->rowCount()));
    m_count->setToolTip(tr("Clients with state in the engine (up to %1, least recently seen forgotten first); the table shows the %2 busiest")
                            .arg(formatCount(s.counters.capacity))
                            .arg(m_model->rowCount()));
}

std::vector<Core::Cidr> ClientsView::selectedRanges() const
{
    std::vector<Core::Cidr> out;
    for (const QModelIndex& i : m_table->selectionModel()->selectedRows()) {
        if (auto c = Core::Cidr::parse(i.data(ClientsModel::KeyRole).toString().toStdString()))
            out.push_back(*c);
    }
    return out;
}

bool ClientsView::selectAddress(const QString& address)
{
    const auto wanted = Core::IpAddress::parse(address.trimmed().toStdString());
    const auto wantedRange = Core::Cidr::parse(address.trimmed().toStdString());
    for (int r = 0; r < m_proxy->rowCount(); ++r) {
        const QModelIndex i = m_proxy->index(r, 0);
        const auto range = Core::Cidr::parse(i.data(ClientsModel::KeyRole).toString().toStdString());
        if (!range)
            continue;
        if ((wanted && range->contains(*wanted)) || (wantedRange && *wantedRange == *range)) {
            m_table->selectionModel()->select(i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
            m_table->scrollTo(i);
            m_table->setCurrentIndex(i);
            return true;
        }
    }
    return false;
}

} // namespace Floodgate::Ui
