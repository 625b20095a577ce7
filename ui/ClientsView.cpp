// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/ClientsView.h"

#include "ui/ClientsModel.h"
#include "ui/Delegates.h"
#include "ui/Format.h"
#include "ui/SnapshotWorker.h"
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
    m_count->setObjectName(QStringLiteral("clientCount"));
    // Its width only grows (apply()): a new count repaints the label
    // without laying out the page four times a second.
    m_count->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_count->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Preferred);
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
    // The user agent takes what the other columns leave, down to a sliver
    // (a stretched last section would keep at least its first width, and
    // push the table past the window).
    m_table->horizontalHeader()->setStretchLastSection(false);
    m_table->horizontalHeader()->setSectionResizeMode(ClientsModel::UserAgent, QHeaderView::Stretch);
    m_table->setItemDelegateForColumn(ClientsModel::Use, new UsageBarDelegate(ClientsModel::UsedRole, ClientsModel::LimitRole, this));
    m_table->setItemDelegateForColumn(ClientsModel::Activity, new SparklineDelegate(ClientsModel::LiveRole, this));
    m_table->setItemDelegateForColumn(ClientsModel::Address, new ClientAddressDelegate(this));
    m_table->setContextMenuPolicy(Qt::CustomContextMenu);
    // Rows tall enough for an IPv6 range over the address it was last seen as.
    const QFontMetrics fm(m_table->font());
    m_table->verticalHeader()->setDefaultSectionSize(std::max(26, fm.height() + QFontMetrics(m_table->font()).height() * 4 / 5 + 2));
    fitColumns();
    m_table->setColumnHidden(ClientsModel::Here, true);  // shown on a node of a cluster
    layout->addWidget(m_table);

    connect(m_filter, &QLineEdit::textChanged, this, [this, proxy](const QString& t) {
        proxy->setNeedle(t.trimmed());
        updateCount();
    });
    connect(m_state, &QComboBox::currentIndexChanged, this, [this, proxy] {
        proxy->setState(m_state->currentData().toInt());
        updateCount();
    });
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

void ClientsView::fitColumns()
{
    // Each column as wide as its widest value can be, measured in the
    // table's font, so nothing in them is cut: the numbers and states have
    // known longest forms; the Client column grows with the longest address
    // seen (apply()); the user agent takes what is left (whole in its tooltip).
    const QFontMetrics fm(m_table->font());
    const int pad = 14;
    auto fit = [&](int column, std::initializer_list<QString> samples) {
        // The header whole too, with room for the sort arrow beside it.
        int w = fm.horizontalAdvance(m_model->headerData(column, Qt::Horizontal, Qt::DisplayRole).toString()) + pad + 12;
        for (const QString& sample : samples)
            w = std::max(w, fm.horizontalAdvance(sample) + pad);
        m_table->setColumnWidth(column, w);
    };
    m_addressWidth = std::max(m_addressWidth, ClientAddressDelegate::widthFor(QStringLiteral("255.255.255.255"), m_table->font()));
    m_table->setColumnWidth(ClientsModel::Address, m_addressWidth);
    fit(ClientsModel::Last3s, {QStringLiteral("\u2265 999")});
    fit(ClientsModel::Last60s, {QStringLiteral("\u2265 9999")});
    fit(ClientsModel::Rate, {QStringLiteral("\u2265 99.9/s")});
    m_table->setColumnWidth(ClientsModel::Activity, 76);
    // The bar's inset and the text's margin inside it take 10 pixels more than a plain cell.
    fit(ClientsModel::Use, {tr("not counted: blocklist"), QStringLiteral("200 / 200  enterprise-1m  ")});
    fit(ClientsModel::Here, {QStringLiteral("99999")});
    fit(ClientsModel::State, {tr("throttled, %1 left").arg(formatDuration(59 * Core::MINUTE + 59 * Core::SECOND, Span::Left))});
    fit(ClientsModel::Customer, {QStringLiteral("hobbyist")});
    fit(ClientsModel::Request, {QStringLiteral("GET /api/v1/orders")});
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
    // The Client column grows to the longest address it has had to show.
    int widest = m_addressWidth;
    for (int r = 0; r < m_model->rowCount(); ++r)
        widest = std::max(widest, ClientAddressDelegate::widthFor(m_model->index(r, ClientsModel::Address).data().toString(), m_table->font()));
    if (widest > m_addressWidth) {
        m_addressWidth = widest;
        m_table->setColumnWidth(ClientsModel::Address, widest);
    }
    m_tracked = s.tracked;
    updateCount();
    m_count->setToolTip(tr("Keys the engine keeps counters for now (at most %1 addresses, the least recently seen forgotten first):\n"
                           "- clients: addresses, and IPv6 clients per prefix; the table lists them, busiest first (at most %2)\n"
                           "- API customers: one per customer id that sent requests (Customers & tiers)\n"
                           "- keys of More rules: one per address and user agent, or per header value, such a rule counted\n"
                           "- Range reads: a file being downloaded in parts (HTTP Range), and who downloads it, "
                           "so its parts are not counted as new requests")
                            .arg(formatCount(s.counters.capacity))
                            .arg(SnapshotWorker::MaxClients));
}

void ClientsView::updateCount()
{
    auto* filter = static_cast<ClientsFilter*>(m_proxy);
    m_count->setText(countText(m_tracked, m_model->rowCount(), m_proxy->rowCount(), !filter->needle.isEmpty() || filter->state >= 0));
    m_count->setMinimumWidth(std::max(m_count->minimumWidth(), m_count->sizeHint().width()));
}

QString ClientsView::countText() const
{
    return m_count->text();
}

QString ClientsView::countToolTip() const
{
    return m_count->toolTip();
}

QString ClientsView::countText(const Core::TrackedKeys& t, int listed, int shown, bool filtered)
{
    // "1 API customer", "3 API customers" (no translation files to pick plurals).
    auto count = [](std::uint64_t n, const QString& one, const QString& many) { return (n == 1 ? one : many).arg(formatCount(n)); };
    // What the table shows of the clients, and why not all of them.
    const bool all = std::uint64_t(listed) >= t.clients;
    const QString match = count(std::uint64_t(shown), tr("%1 matches the filter"), tr("%1 match the filter"));
    QString rows;
    if (all && !filtered)
        rows = tr("all shown");
    else if (all)
        rows = match;
    else if (!filtered)
        rows = tr("the %1 busiest shown").arg(formatCount(std::uint64_t(listed)));
    else
        rows = tr("of the %1 busiest, %2").arg(formatCount(std::uint64_t(listed)), match);
    QStringList others;
    if (t.customers)
        others << count(t.customers, tr("%1 API customer"), tr("%1 API customers"));
    if (t.ruleKeys)
        others << count(t.ruleKeys, tr("%1 key of More rules"), tr("%1 keys of More rules"));
    if (t.rangeReads)
        others << count(t.rangeReads, tr("%1 Range read"), tr("%1 Range reads"));
    if (others.isEmpty())
        return count(t.clients, tr("%1 client tracked: %2"), tr("%1 clients tracked: %2")).arg(rows);
    return tr("%1 tracked: %2 (%3), %4")
        .arg(formatCount(t.total()), count(t.clients, tr("%1 client"), tr("%1 clients")), rows, others.join(QStringLiteral(", ")));
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
