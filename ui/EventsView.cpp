// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/EventsView.h"

#include "ui/Format.h"
#include "ui/StreamModels.h"
#include "ui/Theme.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTextEdit>
#include <QVBoxLayout>

namespace Floodgate::Ui {

namespace {

QTableView* makeTable(QSortFilterProxyModel* proxy)
{
    auto* t = new QTableView;
    t->setModel(proxy);
    // The models keep the newest first; the operator may sort by a column,
    // and clicking back to "Time" descending is the same order.
    t->horizontalHeader()->setSortIndicator(-1, Qt::DescendingOrder);
    t->setSortingEnabled(true);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setSelectionMode(QAbstractItemView::SingleSelection);
    t->setAlternatingRowColors(true);
    t->setWordWrap(false);
    t->verticalHeader()->hide();
    t->verticalHeader()->setDefaultSectionSize(24);
    t->horizontalHeader()->setStretchLastSection(true);
    return t;
}

} // namespace

EventsView::EventsView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(12, 12, 12, 12);
    m_tabs = new QTabWidget;
    layout->addWidget(m_tabs);

    // Refusals.
    auto* events = new QWidget;
    auto* ev = new QVBoxLayout(events);
    m_filter = new QLineEdit;
    m_filter->setPlaceholderText(tr("Filter by client, rule, path or action"));
    m_filter->setClearButtonEnabled(true);
    m_count = new QLabel;
    m_count->setFixedSize(200, m_count->sizeHint().height());  // fixed: a new count repaints the label, not the page
    m_count->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    auto* filterRow = new QHBoxLayout;
    filterRow->addWidget(m_filter, 1);
    filterRow->addWidget(m_count);
    ev->addLayout(filterRow);
    m_events = new EventsModel(this);
    m_eventsProxy = new QSortFilterProxyModel(this);
    m_eventsProxy->setSourceModel(m_events);
    m_eventsProxy->setSortRole(EventsModel::SortRole);
    m_eventsProxy->setFilterKeyColumn(-1);
    m_eventsProxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_eventsProxy->setDynamicSortFilter(true);  // cheap while unsorted: rows arrive at the top
    m_eventsTable = makeTable(m_eventsProxy);
    // Each column as wide as its longest value, measured in the table's
    // font (a whole IPv6 address, a retry-after of minutes); the request
    // takes what is left and is whole in its tooltip.
    const QFontMetrics fm(m_eventsTable->font());
    auto fit = [&](int column, std::initializer_list<QString> samples) {
        int w = fm.horizontalAdvance(m_events->headerData(column, Qt::Horizontal, Qt::DisplayRole).toString()) + 28;  // and the sort arrow
        for (const QString& sample : samples)
            w = std::max(w, fm.horizontalAdvance(sample) + 14);
        m_eventsTable->setColumnWidth(column, w);
    };
    fit(EventsModel::Time, {QStringLiteral("00:00:00")});
    fit(EventsModel::Action, {Theme::actionLabel(Core::Action::Throttle), Theme::actionLabel(Core::Action::DryRun)});
    fit(EventsModel::Rule, {QStringLiteral("cooldown:comments")});
    fit(EventsModel::Client, {QStringLiteral("8888:8888:8888:8888:8888:8888:8888:8888")});  // the widest an address can be
    fit(EventsModel::Count, {QStringLiteral("9999 / 9999")});
    fit(EventsModel::RetryAfter, {formatDuration(59 * Core::MINUTE + 59 * Core::SECOND, Span::Left)});
    fit(EventsModel::Customer, {QStringLiteral("enterprise")});
    m_eventsTable->horizontalHeader()->setStretchLastSection(false);
    m_eventsTable->horizontalHeader()->setSectionResizeMode(EventsModel::Request, QHeaderView::Stretch);
    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(m_eventsTable);
    auto* detail = new QWidget;
    auto* dl = new QHBoxLayout(detail);
    m_why = new QLabel(tr("Select a refusal to see why it happened."));
    m_why->setWordWrap(true);
    m_why->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_show = new QPushButton(Theme::icon(QStringLiteral("clients")), tr("Show this client"));
    m_show->setEnabled(false);
    dl->addWidget(m_why, 1);
    dl->addWidget(m_show, 0, Qt::AlignTop);
    split->addWidget(detail);
    split->setStretchFactor(0, 4);
    ev->addWidget(split);
    m_tabs->addTab(events, Theme::icon(QStringLiteral("events")), tr("Refusals"));

    // Audit trail.
    auto* audit = new QWidget;
    auto* av = new QVBoxLayout(audit);
    m_audit = new AuditModel(this);
    m_auditProxy = new QSortFilterProxyModel(this);
    m_auditProxy->setSourceModel(m_audit);
    m_auditProxy->setSortRole(AuditModel::SortRole);
    m_auditTable = makeTable(m_auditProxy);
    m_auditTable->setColumnWidth(AuditModel::Time, 90);
    m_auditTable->setColumnWidth(AuditModel::Actor, 180);
    m_auditTable->setColumnWidth(AuditModel::Action, 140);
    auto* asplit = new QSplitter(Qt::Vertical);
    asplit->addWidget(m_auditTable);
    m_auditDetail = new QTextEdit;
    m_auditDetail->setReadOnly(true);
    m_auditDetail->setPlaceholderText(tr("Select a change to see what it was before and after."));
    asplit->addWidget(m_auditDetail);
    asplit->setStretchFactor(0, 3);
    av->addWidget(asplit);
    m_tabs->addTab(audit, Theme::icon(QStringLiteral("audit")), tr("Audit trail"));

    connect(m_filter, &QLineEdit::textChanged, this, [this](const QString& t) { m_eventsProxy->setFilterFixedString(t.trimmed()); });
    connect(m_eventsTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &EventsView::updateDetail);
    connect(m_show, &QPushButton::clicked, this, [this] { Q_EMIT showClient(selectedClient()); });
    connect(m_eventsTable, &QTableView::doubleClicked, this, [this] { Q_EMIT showClient(selectedClient()); });
    connect(m_auditTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& i) {
        m_auditDetail->setPlainText(i.sibling(i.row(), 0).data(AuditModel::DetailRole).toString());
    });
}

void EventsView::apply(const ConsoleSnapshot& s)
{
    m_events->apply(s);
    m_audit->apply(s);
    // A label of its own, not the tab's text: a tab title that changes
    // re-lays out the whole page and repaints every row.
    m_count->setText(tr("%1 kept, newest first").arg(formatCount(std::uint64_t(m_events->rowCount()))));
}

QString EventsView::selectedClient() const
{
    const QModelIndex i = m_eventsTable->currentIndex();
    return i.isValid() ? i.sibling(i.row(), 0).data(EventsModel::ClientRole).toString() : QString();
}

void EventsView::updateDetail()
{
    const QModelIndex i = m_eventsTable->currentIndex();
    if (!i.isValid()) {
        m_show->setEnabled(false);
        return;
    }
    m_why->setText(i.sibling(i.row(), 0).data(EventsModel::WhyRole).toString());
    m_show->setEnabled(true);
}

} // namespace Floodgate::Ui
