// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/TierDialogs.h"

#include "ui/DialogParts.h"
#include "ui/Format.h"
#include "ui/LevelsEditor.h"
#include "ui/Theme.h"
#include "ui/TierModels.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace Floodgate::Ui {

TierDialog::TierDialog(const Core::Tier* existing, QStringList taken, QWidget* parent)
    : QDialog(parent)
    , m_taken(std::move(taken))
{
    setWindowTitle(existing ? tr("Edit tier %1").arg(qs(existing->name)) : tr("New tier"));
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    m_name = new QLineEdit;
    m_name->setMaxLength(40);
    form->addRow(tr("Name"), m_name);
    layout->addLayout(form);
    layout->addWidget(new QLabel(tr("Levels: a request passes while every level has room. Changes apply to the next request, "
                                    "and counts made so far are kept.")));
    m_levels = new LevelsEditor({false, false});
    layout->addWidget(m_levels);
    m_problem = addProblemLabel(layout);
    m_buttons = addOkCancel(this, layout);
    if (existing) {
        m_name->setText(qs(existing->name));
        m_name->setReadOnly(true);
        m_taken.removeAll(qs(existing->name));
        m_levels->setLevels(existing->levels);
    } else {
        Core::Level l;
        l.limit = 100;
        l.periodMs = Core::HOUR;
        m_levels->setLevels({l});
    }
    connect(m_name, &QLineEdit::textChanged, this, &TierDialog::revalidate);
    connect(m_levels, &LevelsEditor::changed, this, &TierDialog::revalidate);
    revalidate();
}

void TierDialog::revalidate()
{
    m_why = checkName(m_name->text().trimmed(), 40, m_taken, tr("tier"), Qt::CaseInsensitive);
    if (m_why.isEmpty())
        m_why = m_levels->problem();
    showProblem(m_problem, m_buttons, m_why);
}

Core::Tier TierDialog::tier() const
{
    return Core::Tier{m_name->text().trimmed().toStdString(), m_levels->levels()};
}

CustomerDialog::CustomerDialog(const Core::Customer* existing, const std::vector<Core::Tier>& tiers, QStringList taken, QWidget* parent)
    : QDialog(parent)
    , m_tiers(tiers)
    , m_taken(std::move(taken))
{
    setWindowTitle(existing ? tr("Edit customer %1").arg(qs(existing->id)) : tr("New customer"));
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    m_id = new QLineEdit;
    m_id->setMaxLength(100);
    m_id->setToolTip(tr("What the client sends as customer_id (query) or X-Customer-Id (header)"));
    m_name = new QLineEdit;
    m_tier = new QComboBox;
    for (const Core::Tier& t : m_tiers)
        m_tier->addItem(qs(t.name) + QStringLiteral("  —  ") + TiersModel::describe(t.levels), qs(t.name));
    form->addRow(tr("Customer id"), m_id);
    form->addRow(tr("Name"), m_name);
    form->addRow(tr("Tier"), m_tier);
    layout->addLayout(form);
    layout->addWidget(new QLabel(tr("Overrides: a level here replaces the tier's level of the same period and adds the others.")));
    m_overrides = new LevelsEditor({false, true});
    layout->addWidget(m_overrides);
    m_effective = new QLabel;
    m_effective->setWordWrap(true);
    layout->addWidget(m_effective);
    m_problem = addProblemLabel(layout);
    m_buttons = addOkCancel(this, layout);
    if (existing) {
        m_id->setText(qs(existing->id));
        m_id->setReadOnly(true);
        m_taken.removeAll(qs(existing->id));
        m_name->setText(qs(existing->name));
        m_tier->setCurrentIndex(m_tier->findData(qs(existing->tier)));
        m_overrides->setLevels(existing->overrides);
    }
    connect(m_id, &QLineEdit::textChanged, this, &CustomerDialog::revalidate);
    connect(m_tier, &QComboBox::currentIndexChanged, this, &CustomerDialog::revalidate);
    connect(m_overrides, &LevelsEditor::changed, this, &CustomerDialog::revalidate);
    revalidate();
}

void CustomerDialog::revalidate()
{
    m_why = checkName(m_id->text().trimmed(), 100, m_taken, tr("customer"));
    if (m_why.isEmpty() && m_tier->currentIndex() < 0)
        m_why = tr("Create a tier first.");
    if (m_why.isEmpty())
        m_why = m_overrides->problem();
    const Core::Customer c = customer();
    for (const Core::Tier& t : m_tiers)
        if (t.name == c.tier)
            m_effective->setText(tr("In effect: %1").arg(TiersModel::describe(Core::effectiveLevels(t, c))));
    showProblem(m_problem, m_buttons, m_why);
}

Core::Customer CustomerDialog::customer() const
{
    Core::Customer c;
    c.id = m_id->text().trimmed().toStdString();
    c.name = m_name->text().trimmed().toStdString();
    c.tier = m_tier->currentData().toString().toStdString();
    c.overrides = m_overrides->levels();
    return c;
}

} // namespace Floodgate::Ui
