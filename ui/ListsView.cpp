// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/ListsView.h"

#include "ui/AddressDialog.h"
#include "ui/Format.h"
#include "ui/ListModel.h"
#include "ui/Operations.h"
#include "ui/Theme.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

namespace Floodgate::Ui {

ListsView::ListsView(Operations& operations, const Core::Clock& clock, QWidget* parent)
    : QWidget(parent)
    , m_operations(operations)
    , m_clock(clock)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(12, 12, 12, 12);
    auto* bar = new QHBoxLayout;
    m_filter = new QLineEdit;
    m_filter->setPlaceholderText(tr("Filter by address, reason or who added it"));
    m_filter->setClearButtonEnabled(true);
    bar->addWidget(m_filter, 1);
    auto button = [&](const QString& icon, const QString& text, const QString& tip, void (ListsView::*slot)()) {
        auto* b = new QPushButton(Theme::icon(icon), text);
        b->setToolTip(tip);
        connect(b, &QPushButton::clicked, this, slot);
        bar->addWidget(b);
        return b;
    };
    button(QStringLiteral("add"), tr("Add…"), tr("Add an address or a range to a list"), &ListsView::addEntry);
    button(QStringLiteral("edit"), tr("Edit…"), tr("Change the reason or the expiry of the selected entry"), &ListsView::editEntry);
    button(QStringLiteral("clock"), tr("Extend 7 days"), tr("Make the selected entries end 7 days later"), &ListsView::extendEntry);
    button(QStringLiteral("remove"), tr("Remove"), tr("Take the selected entries off the list (undoable)"), &ListsView::removeEntries);
    button(QStringLiteral("import"), tr("Import…"), tr("Add entries from a .csv, .json or .txt file (one address a line): all or nothing"), &ListsView::importFile);
    button(QStringLiteral("export"), tr("Export…"), tr("Save both lists to a .csv or .json file"), &ListsView::exportFile);
    layout->addLayout(bar);

    m_tabs = new QTabWidget;
    for (Core::ListKind kind : {Core::ListKind::Blocklist, Core::ListKind::Safelist}) {
        Tab& t = m_lists[std::size_t(kind)];
        t.model = new ListModel(kind, this);
        t.proxy = new QSortFilterProxyModel(this);
        t.proxy->setSourceModel(t.model);
        t.proxy->setSortRole(ListModel::SortRole);
        t.proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
        t.proxy->setFilterKeyColumn(-1);
        t.proxy->setDynamicSortFilter(true);
        t.table = new QTableView;
        t.table->setModel(t.proxy);
        t.table->setSortingEnabled(true);
        t.table->sortByColumn(ListModel::Created, Qt::DescendingOrder);
        t.table->setSelectionBehavior(QAbstractItemView::SelectRows);
        t.table->setAlternatingRowColors(true);
        t.table->verticalHeader()->hide();
        t.table->horizontalHeader()->setSectionResizeMode(ListModel::Reason, QHeaderView::Stretch);
        t.table->setColumnWidth(ListModel::Address, 220);
        t.table->setColumnWidth(ListModel::Created, 140);
        t.table->setColumnWidth(ListModel::CreatedBy, 140);
        t.table->setColumnWidth(ListModel::Expires, 140);
        connect(t.table, &QTableView::doubleClicked, this, &ListsView::editEntry);
        m_tabs->addTab(t.table, Theme::icon(kind == Core::ListKind::Blocklist ? QStringLiteral("block") : QStringLiteral("safelist")),
                       kind == Core::ListKind::Blocklist ? tr("Blocklist") : tr("Safelist"));
    }
    layout->addWidget(m_tabs);
    auto* hint = new QLabel(tr("Entries end exactly at their expiry and are then purged; the audit trail keeps who added them. "
                               "Automatic entries come from escalation: a client refused again and again is banned for a while, "
                               "longer each time."));
    hint->setWordWrap(true);
    Theme::setTextColor(hint, Theme::muted());
    layout->addWidget(hint);
    connect(m_filter, &QLineEdit::textChanged, this, [this](const QString& text) {
        for (Tab& t : m_lists)
            t.proxy->setFilterFixedString(text.trimmed());
    });
}

ListModel* ListsView::model(Core::ListKind kind) const
{
    return m_lists[std::size_t(kind)].model;
}

QTableView* ListsView::table(Core::ListKind kind) const
{
    return m_lists[std::size_t(kind)].table;
}

void ListsView::showList(Core::ListKind kind)
{
    m_tabs->setCurrentIndex(kind == Core::ListKind::Blocklist ? 0 : 1);
}

Core::ListKind ListsView::currentKind() const
{
    return m_tabs->currentIndex() == 0 ? Core::ListKind::Blocklist : Core::ListKind::Safelist;
}

void ListsView::apply(const ConsoleSnapshot& s, bool visible)
{
    for (Tab& t : m_lists) {
        t.model->apply(s);
        if (visible)
            t.model->refreshCountdown();
    }
    // Only when a count changed: a new tab title re-lays out the page.
    const QString block = tr("Blocklist (%1)").arg(m_lists[std::size_t(Core::ListKind::Blocklist)].model->rowCount());
    const QString safe = tr("Safelist (%1)").arg(m_lists[std::size_t(Core::ListKind::Safelist)].model->rowCount());
    if (m_tabs->tabText(0) != block)
        m_tabs->setTabText(0, block);
    if (m_tabs->tabText(1) != safe)
        m_tabs->setTabText(1, safe);
}

std::vector<Core::ListEntry> ListsView::selectedEntries() const
{
    const Tab& t = m_lists[std::size_t(currentKind())];
    std::vector<Core::ListEntry> out;
    for (const QModelIndex& i : t.table->selectionModel()->selectedRows())
        if (const ListRow* row = t.model->rowAt(t.proxy->mapToSource(i).row()))
            out.push_back(row->entry);
    return out;
}

std::vector<Core::Cidr> ListsView::selectedRanges() const
{
    std::vector<Core::Cidr> out;
    for (const Core::ListEntry& e : selectedEntries())
        out.push_back(e.range);
    return out;
}

void ListsView::addEntry()
{
    AddressDialog dialog(currentKind(), m_clock.now(), this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    const AddressDialog::Result r = dialog.result();
    const Core::Millis now = m_clock.now();
    const QString list = r.kind == Core::ListKind::Blocklist ? tr("blocklist") : tr("safelist");
    m_operations.saveEntry(r.kind, r.newEntry(now), tr("Added %1 to the %2 %3.").arg(rangeText(r.range), list, formatDuration(r.ttlFrom(now), Span::For)));
}

void ListsView::editEntry()
{
    const auto selected = selectedEntries();
    if (selected.size() != 1)
        return;
    const Core::ListKind kind = currentKind();
    AddressDialog dialog(kind, m_clock.now(), this, &selected[0]);
    if (dialog.exec() != QDialog::Accepted)
        return;
    const AddressDialog::Result r = dialog.result();
    Core::ListEntry e = selected[0];  // keeps when and by whom it was created
    e.reason = r.reason.toStdString();
    e.expiresAt = r.expiresAtFrom(m_clock.now());
    if (e.source == Core::ListSource::Automatic)
        e.source = Core::ListSource::Operator;
    m_operations.saveEntry(kind, e, tr("Saved %1.").arg(rangeText(e.range)));
}

void ListsView::extendEntry()
{
    const auto selected = selectedEntries();
    if (!selected.empty())
        m_operations.extend(currentKind(), selected, 7 * Core::DAY);
}

void ListsView::removeEntries()
{
    const std::vector<Core::Cidr> ranges = selectedRanges();
    if (!ranges.empty())
        m_operations.removeFromLists(ranges, currentKind());
}

void ListsView::importFile()
{
    const QString path = QFileDialog::getOpenFileName(this, tr("Import list entries"), {}, tr("List files (*.csv *.json *.txt);;All files (*)"));
    if (!path.isEmpty())
        m_operations.importFile(path);
}

void ListsView::exportFile()
{
    const QString path = QFileDialog::getSaveFileName(this, tr("Export the lists"), QStringLiteral("floodgate-lists.csv"),
                                                      tr("CSV (*.csv);;JSON (*.json)"));
    if (!path.isEmpty())
        m_operations.exportFile(path);
}

} // namespace Floodgate::Ui
