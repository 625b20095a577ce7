// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/TiersView.h"

#include "ui/Console.h"
#include "ui/Delegates.h"
#include "ui/Format.h"
#include "ui/NoticeBar.h"
#include "ui/Theme.h"
#include "ui/TierDialogs.h"
#include "ui/TierModels.h"

#include "core/CustomerKey.h"

#include <QClipboard>
#include <QDialog>
#include <QDialogButtonBox>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLineEdit>
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
    m_customerTable->setColumnWidth(CustomersModel::Keys, 200);
    section(tr("<b>Customers</b> — each proves who it is with its API key (or through a trusted proxy); a claim without proof is "
               "counted per address"),
            m_customerTable,
            {{QStringLiteral("add"), tr("New customer…"), &TiersView::addCustomer},
             {QStringLiteral("edit"), tr("Edit…"), &TiersView::editCustomer},
             {QStringLiteral("key"), tr("New key…"), &TiersView::newKey},
             {QStringLiteral("remove"), tr("Revoke key…"), &TiersView::revokeKey},
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
    Core::Customer c = d.customer();
    auto fresh = Core::makeCustomerKey(m_console.services().clock->now());
    if (!fresh) {
        QMessageBox::warning(this, tr("Not saved"), tr("No random bytes for the customer's API key (OpenSSL's generator failed)."));
        return;
    }
    c.keys = {fresh->key};
    m_console.putCustomer(c, [this, id = qs(c.id), secret = qs(fresh->secret)](const Storage::Outcome& o) {
        saved(o, tr("Customer %1 saved.").arg(id));
        if (o.result == Storage::Result::Created)
            showNewKey(id, secret);
    });
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

void TiersView::newKey()
{
    const CustomerRow* row = m_customers->rowAt(m_customerTable->currentIndex().row());
    if (!row) {
        m_notice.show(tr("Select a customer first."));
        return;
    }
    const QString id = qs(row->customer.id);
    // The choices of a rotation: how long the keys it has stay valid.
    const std::pair<QString, Core::Millis> overlaps[] = {
        {tr("Revoke its other keys at once"), 0},
        {tr("Keep its other keys valid for 1 hour"), Core::HOUR},
        {tr("Keep its other keys valid for 24 hours"), Core::DAY},
        {tr("Keep its other keys valid for 7 days"), 7 * Core::DAY},
    };
    Core::Millis keepOld = 0;
    if (!row->customer.keys.empty()) {
        QStringList items;
        for (const auto& [text, ms] : overlaps)
            items << text;
        bool ok = false;
        const QString chosen = QInputDialog::getItem(this, tr("New key for %1").arg(id),
                                                     tr("%1 has %n key(s). While its clients move to the new key:", nullptr,
                                                        int(row->customer.keys.size()))
                                                         .arg(id),
                                                     items, 1, false, &ok);
        if (!ok)
            return;
        for (const auto& [text, ms] : overlaps)
            if (text == chosen)
                keepOld = ms;
    }
    auto fresh = Core::makeCustomerKey(m_console.services().clock->now());
    if (!fresh) {
        QMessageBox::warning(this, tr("Not saved"), tr("No random bytes for the key (OpenSSL's generator failed)."));
        return;
    }
    m_console.addCustomerKey(id, fresh->key, keepOld, [this, id, secret = qs(fresh->secret)](const Storage::Outcome& o) {
        saved(o, tr("Customer %1 has a new API key.").arg(id));
        if (o.ok())
            showNewKey(id, secret);
    });
}

void TiersView::revokeKey()
{
    const CustomerRow* row = m_customers->rowAt(m_customerTable->currentIndex().row());
    if (!row || row->customer.keys.empty()) {
        m_notice.show(row ? tr("%1 has no key to revoke.").arg(qs(row->customer.id)) : tr("Select a customer first."));
        return;
    }
    const QString id = qs(row->customer.id);
    QStringList items;
    for (const Core::CustomerKey& k : row->customer.keys)
        items << qs(k.id);
    bool ok = false;
    const QString keyId = QInputDialog::getItem(this, tr("Revoke a key of %1").arg(id),
                                                tr("Requests with the key revoked are counted per address at once:"), items, 0, false, &ok);
    if (!ok)
        return;
    m_console.revokeCustomerKey(id, keyId, [this, id, keyId](const Storage::Outcome& o) { saved(o, tr("Key %1… of %2 revoked.").arg(keyId, id)); });
}

void TiersView::showNewKey(const QString& customer, const QString& secret)
{
    const SnapshotPtr s = m_console.latest();
    const QString header = s && s->config ? qs(s->config->settings.customerKeyHeader) : QStringLiteral("X-Api-Key");
    auto* d = new QDialog(this);
    d->setObjectName(QStringLiteral("newKeyDialog"));
    d->setAttribute(Qt::WA_DeleteOnClose);
    d->setWindowTitle(tr("API key of %1").arg(customer));
    auto* v = new QVBoxLayout(d);
    auto* text = new QLabel(tr("<b>Copy this key now: it is shown only this once.</b> Floodgate keeps only its SHA-256, so nobody "
                               "can show it again; if it is lost, make a new one.<br>The customer sends it in every request as "
                               "<code>%1: …</code>")
                                .arg(header.toHtmlEscaped()));
    text->setWordWrap(true);
    v->addWidget(text);
    auto* key = new QLineEdit(secret);
    key->setObjectName(QStringLiteral("apiKey"));
    key->setReadOnly(true);
    key->setMinimumWidth(key->fontMetrics().horizontalAdvance(secret) + 24);
    key->selectAll();
    v->addWidget(key);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    auto* copy = buttons->addButton(tr("Copy"), QDialogButtonBox::ActionRole);
    connect(copy, &QPushButton::clicked, d, [key] { QGuiApplication::clipboard()->setText(key->text()); });
    connect(buttons, &QDialogButtonBox::rejected, d, &QDialog::reject);
    v->addWidget(buttons);
    d->open();
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
