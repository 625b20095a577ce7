// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/AddressDialog.h"

#include "ui/DialogParts.h"
#include "ui/Format.h"
#include "ui/Theme.h"
#include "core/Tuning.h"

#include <QButtonGroup>
#include <QComboBox>
#include <QDateTimeEdit>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QVBoxLayout>

namespace Floodgate::Ui {

namespace {
using Core::DAY;
using Core::HOUR;
constexpr std::array<Core::Millis, 4> TTLS = {HOUR, DAY, 7 * DAY, 30 * DAY};
} // namespace

AddressDialog::AddressDialog(Core::ListKind kind, Core::Millis now, QWidget* parent, const Core::ListEntry* existing)
    : QDialog(parent)
    , m_now(now)
{
    setWindowTitle(existing ? tr("Edit list entry") : tr("Add to a list"));
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    m_list = new QComboBox;
    m_list->addItem(Theme::icon(QStringLiteral("block")), tr("Blocklist — refuse every request with 403"), int(Core::ListKind::Blocklist));
    m_list->addItem(Theme::icon(QStringLiteral("safelist")), tr("Safelist — never throttle"), int(Core::ListKind::Safelist));
    m_list->setCurrentIndex(kind == Core::ListKind::Blocklist ? 0 : 1);
    form->addRow(tr("List"), m_list);
    m_address = new QLineEdit;
    m_address->setPlaceholderText(tr("203.0.113.7, 198.51.100.0/24 or 2001:db8::/48"));
    m_normalized = new QLabel;
    Theme::setTextColor(m_normalized, Theme::muted());
    auto* addressBox = new QVBoxLayout;
    addressBox->addWidget(m_address);
    addressBox->addWidget(m_normalized);
    form->addRow(tr("Address or range"), addressBox);
    m_reason = new QLineEdit;
    m_reason->setPlaceholderText(tr("why, for whoever reads this later"));
    m_reason->setMaxLength(500);
    form->addRow(tr("Reason"), m_reason);

    auto* ttl = new QVBoxLayout;
    m_choices = new QButtonGroup(this);
    const QStringList labels = {tr("1 hour"), tr("24 hours"), tr("7 days"), tr("30 days"), tr("Permanent"), tr("Until")};
    auto* row = new QHBoxLayout;
    for (int i = 0; i < labels.size(); ++i) {
        auto* b = new QRadioButton(labels[i]);
        m_choices->addButton(b, i);
        row->addWidget(b);
    }
    m_until = new QDateTimeEdit(QDateTime::fromMSecsSinceEpoch(now + 7 * DAY));
    m_until->setCalendarPopup(true);
    m_until->setDisplayFormat(QStringLiteral("yyyy-MM-dd HH:mm"));
    row->addWidget(m_until);
    row->addStretch();
    ttl->addLayout(row);
    form->addRow(tr("Expires"), ttl);
    layout->addLayout(form);

    m_problem = addProblemLabel(layout);
    m_buttons = addOkCancel(this, layout);
    connect(m_address, &QLineEdit::textChanged, this, &AddressDialog::revalidate);
    connect(m_choices, &QButtonGroup::idClicked, this, &AddressDialog::revalidate);
    connect(m_until, &QDateTimeEdit::dateTimeChanged, this, [this] {
        m_choices->button(5)->setChecked(true);
        revalidate();
    });

    if (existing) {
        m_address->setText(qs(existing->range.toString()));
        m_address->setReadOnly(true);
        m_list->setEnabled(false);
        m_reason->setText(qs(existing->reason));
        if (existing->expiresAt == Core::NeverExpires) {
            setChoice(4);
        } else {
            m_until->setDateTime(QDateTime::fromMSecsSinceEpoch(existing->expiresAt));
            setChoice(5);
        }
    } else {
        setChoice(DefaultChoice);
    }
    revalidate();
    m_address->setFocus();
}

void AddressDialog::setAddress(const QString& text)
{
    m_address->setText(text);
}

void AddressDialog::setChoice(int choice)
{
    if (auto* b = m_choices->button(choice))
        b->setChecked(true);
    revalidate();
}

void AddressDialog::revalidate()
{
    std::string why;
    const std::string text = m_address->text().trimmed().toStdString();
    m_range = text.empty() ? std::nullopt : Core::Cidr::parse(text, &why);
    m_why.clear();
    if (text.empty())
        m_why = tr("Type an address or a range.");
    else if (!m_range)
        m_why = tr("Not an address: %1").arg(qs(why));
    else if (m_choices->checkedId() == 5 && m_until->dateTime().toMSecsSinceEpoch() <= m_now)
        m_why = tr("The end must be in the future.");
    m_normalized->setText(m_range ? tr("Stored as %1%2")
                                        .arg(qs(m_range->toString()))
                                        .arg(m_range->isSingleAddress()
                                                 ? QString()
                                                 : tr(" — every address in the range"))
                                  : QString());
    showProblem(m_problem, m_buttons, m_why);
}

bool AddressDialog::acceptable() const
{
    return m_why.isEmpty();
}

QString AddressDialog::problem() const
{
    return m_why;
}

AddressDialog::Result AddressDialog::result() const
{
    Result r;
    r.kind = Core::ListKind(m_list->currentData().toInt());
    if (m_range)
        r.range = *m_range;
    r.reason = m_reason->text().trimmed();
    const int choice = m_choices->checkedId();
    if (choice >= 0 && choice < int(TTLS.size())) {
        r.ttlMs = TTLS[std::size_t(choice)];
        r.expiresAt = m_now + r.ttlMs;
    }
    else if (choice == 5)
        r.expiresAt = m_until->dateTime().toMSecsSinceEpoch();
    else
        r.expiresAt = Core::NeverExpires;
    return r;
}

} // namespace Floodgate::Ui
