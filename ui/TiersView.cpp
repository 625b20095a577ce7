// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/TiersView.h"

#include "ui/Console.h"
#include "ui/Delegates.h"
#include "ui/Format.h"
#include "ui/NoticeBar.h"
#include "ui/Theme.h"
#include "ui/TierDialogs.h"
#include "ui/TierModels.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

namespace Floodgate::Ui {

namespace {

QTableView* makeTable(QAbstractItemModel* model)
{
    auto* t = new QTableView;
    t->setModel(model);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setSelectionMode(QAbstractItemView::SingleSelection);
    t->setAlternatingRowColors(true);
    t->verticalHeader()->hide();
    t->horizontalHeader()->setStretchLastSection(true);
    t->verticalHeader()->setDefaultSectionSize(26);
    return t;
}

} // namespace

TiersView::TiersView(Console& console, NoticeBar& notice, QWidget* parent)
    : QWidget(parent)
    , m_console(console)
    , m_notice(notice)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(12, 12, 12, 12);
    auto* splitter = new QSplitter(Qt::Vertical);

    auto section = [&](const QString& title, QTableView* table, std::initializer_list<std::tuple<QString, QString, void (TiersView::*)()>> buttons) {
        auto* box = new QWidget;
        auto* v = new QVBoxLayout(box);
        v->setContentsMargins(0, 0, 0, 0);
        auto* bar = new QHBoxLayout;
        bar->addWidget(new QLabel(title));
        bar->addStretch();
        for (const auto& [icon, text, slot] : buttons) {
            auto* b = new QPushButton(Theme::icon(icon), text);
            connect(b, &QPushButton::clicked, this, slot);
            bar->addWidget(b);
        }
        v->addLayout(bar);
        v->addWidget(table);
        splitter->addWidget(box);
    };
    m_tiers = new TiersModel(this);
    m_tierTable = makeTable(m_tiers);
    m_tierTable->setColumnWidth(0, 160);
    m_tierTable->setColumnWidth(1, 320);
    connect(m_tierTable, &QTableView::doubleClicked, this, &TiersView::editTier);
    section(tr("<b>Tiers</b> — what each kind of API customer may send"), m_tierTable,
            {{QStringLiteral("add"), tr("New tier…"), &TiersView::addTier},
             {QStringLiteral("edit"), tr("Edit…"), &TiersView::editTier},
             {QStringLiteral("remove"), tr("Delete"), &TiersView::deleteTier}});
    m_customers = new CustomersModel(this);
    m_customerTable = makeTable(m_customers);
    m_customerTable->setItemDelegateForColumn(CustomersModel::Use, new UsageBarDelegate(CustomersModel::UsedRole, CustomersModel::LimitRole, this));
    m_customerTable->setColumnWidth(CustomersModel::Id, 140);
    m_customerTable->setColumnWidth(CustomersModel::Name, 180);
    m_customerTable->setColumnWidth(CustomersModel::Tier, 110);
    m_customerTable->setColumnWidth(CustomersModel::Overrides, 200);
    connect(m_customerTable, &QTableView::doubleClicked, this, &TiersView::editCustomer);
    section(tr("<b>Customers</b> — known by the customer_id they send; anyone else is counted per address"), m_customerTable,
            {{QStringLiteral("add"), tr("New customer…"), &TiersView::addCustomer},
             {QStringLiteral("edit"), tr("Edit…"), &TiersView::editCustomer},
             {QStringLiteral("remove"), tr("Delete"), &TiersView::deleteCustomer}});
    layout->addWidget(splitter);
}

void TiersView::apply(const ConsoleSnapshot& s)
{
    m_tiers->apply(s);
    m_customers->apply(s);
}

void TiersView::saved(const Storage::Outcome& o, const QString& text)
{
    if (o.ok())
        m_notice.show(text);
    else if (!o.storageFailed())  // 5xx reach the banner through Console::problem
        QMessageBox::warning(this, tr("Not saved"), qs(o.error));
}

void TiersView::addTier()
{
    QStringList taken;
    for (const auto& r : m_tiers->rows())
        taken << qs(r.tier.name);
    TierDialog d(nullptr, taken, this);
    if (d.exec() != QDialog::Accepted)
        return;
    const Core::Tier t = d.tier();
    m_console.putTier(t, [this, name = qs(t.name)](const Storage::Outcome& o) { saved(o, tr("Tier %1 saved; it applies to the next request.").arg(name)); });
}

void TiersView::editTier()
{
    const TierRow* row = m_tiers->rowAt(m_tierTable->currentIndex().row());
    if (!row)
        return;
    TierDialog d(&row->tier, {}, this);
    if (d.exec() != QDialog::Accepted)
        return;
    const Core::Tier t = d.tier();
    m_console.putTier(t, [this, t](const Storage::Outcome& o) {
        saved(o, tr("Tier %1 is now %2; it applies to the next request.").arg(qs(t.name), TiersModel::describe(t.levels)));
    });
}

void TiersView::deleteTier()
{
    const TierRow* row = m_tiers->rowAt(m_tierTable->currentIndex().row());
    if (!row)
        return;
    const QString name = qs(row->tier.name);
    if (QMessageBox::question(this, tr("Delete tier"), tr("Delete the tier %1?").arg(name)) != QMessageBox::Yes)
        return;
    m_console.deleteTier(name, [this, name](const Storage::Outcome& o) { saved(o, tr("Tier %1 deleted.").arg(name)); });
}

void TiersView::addCustomer()
{
    QStringList taken;
    for (const auto& r : m_customers->rows())
        taken << qs(r.customer.id);
    std::vector<Core::Tier> tiers;
    for (const auto& r : m_tiers->rows())
        tiers.push_back(r.tier);
    CustomerDialog d(nullptr, tiers, taken, this);
    if (d.exec() != QDialog::Accepted)
        return;
    const Core::Customer c = d.customer();
    m_console.putCustomer(c, [this, id = qs(c.id)](const Storage::Outcome& o) { saved(o, tr("Customer %1 saved.").arg(id)); });
}

void TiersView::editCustomer()
{
    const CustomerRow* row = m_customers->rowAt(m_customerTable->currentIndex().row());
    if (!row)
        return;
    std::vector<Core::Tier> tiers;
    for (const auto& r : m_tiers->rows())
        tiers.push_back(r.tier);
    CustomerDialog d(&row->customer, tiers, {}, this);
    if (d.exec() != QDialog::Accepted)
        return;
    const Core::Customer c = d.customer();
    m_console.putCustomer(c, [this, id = qs(c.id)](const Storage::Outcome& o) { saved(o, tr("Customer %1 saved; it applies to the next request.").arg(id)); });
}

void TiersView::deleteCustomer()
{
    const CustomerRow* row = m_customers->rowAt(m_customerTable->currentIndex().row());
    if (!row)
        return;
    const QString id = qs(row->customer.id);
    if (QMessageBox::question(this, tr("Delete customer"), tr("Delete the customer %1? Its clients are then counted per address.").arg(id))
        != QMessageBox::Yes)
        return;
    m_console.deleteCustomer(id, [this, id](const Storage::Outcome& o) { saved(o, tr("Customer %1 deleted.").arg(id)); });
}

} // namespace Floodgate::Ui
