// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/ThrottleRulesEditor.h"

#include "ui/Format.h"
#include "ui/LevelsEditor.h"
#include "ui/RuleDialog.h"
#include "ui/Theme.h"
#include "ui/TierModels.h"

#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace Floodgate::Ui {

namespace {

enum MoreColumn { MoreName, MoreKey, MoreScope, MoreLevels, MoreColumns };

} // namespace

ThrottleRulesEditor::ThrottleRulesEditor(std::function<Core::EngineConfig()> edited, QWidget* parent)
    : RulesSection(parent)
    , m_edited(std::move(edited))
{
    auto* ipLayout = new QVBoxLayout(addBox(tr("Per-IP limits (anonymous clients)")));
    // Two lines, each short enough for a 1280-pixel window (a word-wrapped
    // label would make the scrolled page lay out its tables at their size
    // hints instead of their contents).
    ipLayout->addWidget(new QLabel(tr("A request passes while every level has room. Several levels make an exponential back-off "
                                      "(6 / 3 s, 300 / 5 min, 600 / 30 min).")));
    ipLayout->addWidget(new QLabel(tr("IPv6 clients are counted per prefix.")));
    // Said where the levels would be: with none, no anonymous client is
    // limited (only the API can store that, with "ip_levels_disabled").
    m_ipOff = new QLabel(tr("Per-IP limiting is off: anonymous clients are limited by no level here, only by the rules below "
                            "that match them. Add a level to turn it on."));
    m_ipOff->setObjectName(QStringLiteral("perIpOff"));
    m_ipOff->setWordWrap(true);
    Theme::setTextColor(m_ipOff, Theme::action(Core::Action::Throttle));
    ipLayout->addWidget(m_ipOff);
    m_levels = new LevelsEditor({true, false});
    ipLayout->addWidget(m_levels);

    auto* moreLayout = new QVBoxLayout(addBox(tr("More rules: count by another key, or limit one path more tightly")));
    m_moreTable = new QTableWidget(0, MoreColumns);
    m_moreTable->setHorizontalHeaderLabels({tr("Rule"), tr("Counted by"), tr("Applies to"), tr("Levels")});
    m_moreTable->horizontalHeader()->setSectionResizeMode(MoreLevels, QHeaderView::Stretch);
    m_moreTable->verticalHeader()->hide();
    m_moreTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_moreTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_moreTable->setSelectionMode(QAbstractItemView::SingleSelection);
    m_moreTable->setMinimumHeight(90);
    m_moreTable->setToolTip(tr("Double-click a rule to edit it"));
    moreLayout->addWidget(m_moreTable);
    auto* moreButtons = new QHBoxLayout;
    auto* addRule = new QPushButton(Theme::icon(QStringLiteral("add")), tr("Add rule…"));
    auto* editRuleButton = new QPushButton(Theme::icon(QStringLiteral("edit")), tr("Edit…"));
    auto* removeRule = new QPushButton(Theme::icon(QStringLiteral("remove")), tr("Remove"));
    moreButtons->addWidget(addRule);
    moreButtons->addWidget(editRuleButton);
    moreButtons->addWidget(removeRule);
    moreButtons->addStretch();
    moreLayout->addLayout(moreButtons);

    auto showIpOff = [this] { m_ipOff->setVisible(m_levels->levels().empty()); };
    showIpOff();
    connect(m_levels, &LevelsEditor::changed, this, [this, showIpOff] {
        showIpOff();
        Q_EMIT changed();
    });
    connect(addRule, &QPushButton::clicked, this, [this] { editRule(-1); });
    connect(editRuleButton, &QPushButton::clicked, this, [this] { editRule(m_moreTable->currentRow()); });
    connect(m_moreTable, &QTableWidget::cellDoubleClicked, this, [this](int row, int) { editRule(row); });
    connect(removeRule, &QPushButton::clicked, this, [this] {
        const int row = m_moreTable->currentRow();
        if (row < 0 || row >= int(m_moreRules.size()))
            return;
        m_moreRules.erase(m_moreRules.begin() + row);
        showMoreRules();
        Q_EMIT changed();
    });
}

void ThrottleRulesEditor::load(const Core::EngineConfig& c)
{
    const Core::ThrottleRule* ip = nullptr;
    m_moreRules.clear();
    for (const Core::ThrottleRule& r : c.rules) {
        if (!ip && Core::isPerIpRule(r))
            ip = &r;
        else
            m_moreRules.push_back(r);
    }
    m_levels->setLevels(ip ? ip->levels : std::vector<Core::Level>{});
    showMoreRules();
}

void ThrottleRulesEditor::store(Core::EngineConfig& c) const
{
    // The per-IP rule keeps its place among the others.
    Core::ThrottleRule ip;
    ip.name = "ip";
    std::size_t ipAt = 0;
    bool hadIp = false;
    for (std::size_t i = 0; i < c.rules.size(); ++i) {
        if (Core::isPerIpRule(c.rules[i])) {
            ip = c.rules[i];
            ipAt = i;
            hadIp = true;
            break;
        }
    }
    ip.levels = m_levels->levels();
    c.rules = m_moreRules;
    // Per-IP limiting turned off (through the API) stays off until the
    // operator gives it a level; the form never turns it off by itself.
    if (hadIp || !ip.levels.empty())
        c.rules.insert(c.rules.begin() + std::ptrdiff_t(std::min(ipAt, c.rules.size())), ip);
}

QString ThrottleRulesEditor::problem(const Core::EngineConfig& base) const
{
    // No levels is what the stored rules say when per-IP limiting was
    // turned off; emptying them here is a problem (LevelsEditor says so).
    return m_levels->levels().empty() && !Core::perIpLimiting(base.rules) ? QString() : m_levels->problem();
}

void ThrottleRulesEditor::showMoreRules()
{
    const int current = m_moreTable->currentRow();
    m_moreTable->setRowCount(0);
    for (const Core::ThrottleRule& r : m_moreRules)
        appendRow(m_moreTable, {qs(r.name), RuleDialog::describeKey(r), RuleDialog::describeScope(r), TiersModel::describe(r.levels)});
    m_moreTable->resizeColumnsToContents();
    for (int col = 0; col < MoreLevels; ++col)
        m_moreTable->setColumnWidth(col, std::max(m_moreTable->columnWidth(col) + 16, 140));
    m_moreTable->horizontalHeader()->setSectionResizeMode(MoreLevels, QHeaderView::Stretch);
    if (current >= 0 && current < m_moreTable->rowCount())
        m_moreTable->selectRow(current);
}

void ThrottleRulesEditor::editRule(int row)
{
    const bool isNew = row < 0 || row >= int(m_moreRules.size());
    QStringList taken;
    for (const Core::ThrottleRule& r : m_edited().rules)
        taken << qs(r.name);
    RuleDialog dialog(isNew ? nullptr : &m_moreRules[std::size_t(row)], taken, this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    if (isNew)
        m_moreRules.push_back(dialog.rule());
    else
        m_moreRules[std::size_t(row)] = dialog.rule();
    showMoreRules();
    m_moreTable->selectRow(isNew ? int(m_moreRules.size()) - 1 : row);
    Q_EMIT changed();
}

} // namespace Floodgate::Ui
