// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/ExclusionsEditor.h"

#include "ui/SettingFields.h"

#include <QCheckBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QPlainTextEdit>

namespace Floodgate::Ui {

ExclusionsEditor::ExclusionsEditor(QWidget* parent)
    : RulesSection(parent)
    , m_fields(new SettingFields(this))
{
    auto* form = new QFormLayout(addBox(tr("Not counted")));
    m_excluded = new QPlainTextEdit;
    m_excluded->setPlaceholderText(tr("one glob per line: *.css, /static/*"));
    m_excluded->setMaximumHeight(90);
    m_safeAgents = new QPlainTextEdit;
    m_safeAgents->setPlaceholderText(tr("one per line: Googlebot (a substring) or *UptimeRobot* (a glob)"));
    m_safeAgents->setMaximumHeight(70);
    form->addRow(tr("Excluded paths"), m_excluded);
    form->addRow(tr("Safe user agents"), m_safeAgents);
    form->addRow(QString(), m_fields->flag("cookieless_only", tr("Count only requests without cookies (people with a session are not counted)")));

    for (QPlainTextEdit* e : {m_excluded, m_safeAgents})
        connect(e, &QPlainTextEdit::textChanged, this, &RulesSection::changed);
    connect(m_fields, &SettingFields::changed, this, &RulesSection::changed);
}

void ExclusionsEditor::load(const Core::EngineConfig& c)
{
    m_excluded->setPlainText(joinedLines(c.bot.excludedPaths));
    m_safeAgents->setPlainText(joinedLines(c.bot.safeUserAgents));
    m_fields->load(c);
}

void ExclusionsEditor::store(Core::EngineConfig& c) const
{
    c.bot.excludedPaths = toStdStrings(nonEmptyLines(m_excluded));
    c.bot.safeUserAgents = toStdStrings(nonEmptyLines(m_safeAgents));
    m_fields->store(c);
}

} // namespace Floodgate::Ui
