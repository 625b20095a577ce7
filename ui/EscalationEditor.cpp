// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/EscalationEditor.h"

#include "ui/SettingFields.h"

#include <QCheckBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QSpinBox>

namespace Floodgate::Ui {

EscalationEditor::EscalationEditor(QWidget* parent)
    : RulesSection(parent)
    , m_fields(new SettingFields(this))
{
    auto* form = new QFormLayout(addBox(tr("Escalation (automatic blocklist)")));
    form->addRow(QString(), m_fields->flag("escalation.enabled", tr("Ban clients that keep being refused")));
    QSpinBox* refusals = m_fields->number("escalation.refusals");
    refusals->setSuffix(tr(" refusals"));
    form->addRow(tr("After"), refusals);
    form->addRow(tr("within"), m_fields->number("escalation.find"));
    form->addRow(tr("ban for"), m_fields->number("escalation.ban"));
    form->addRow(tr("doubling up to"), m_fields->number("escalation.max_ban"));
    connect(m_fields, &SettingFields::changed, this, &RulesSection::changed);
}

void EscalationEditor::load(const Core::EngineConfig& c)
{
    m_fields->load(c);
}

void EscalationEditor::store(Core::EngineConfig& c) const
{
    m_fields->store(c);
}

QString EscalationEditor::problem(const Core::EngineConfig& base) const
{
    Core::EngineConfig c = base;
    store(c);
    if (c.escalation.maxBanMs < c.escalation.banMs)
        return tr("The longest ban must not be shorter than the first.");
    return {};
}

} // namespace Floodgate::Ui
