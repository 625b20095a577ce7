// SPDX-License-Identifier: GPL-3.0-or-later
// The rules section of the Rules view: the per-IP levels that limit every
// anonymous client (with the warning when there are none), and the table
// of the other rules — another key, or one path limited more tightly —
// edited in RuleDialog. One section, because both write the rule list and
// the per-IP rule keeps its place among the others.
#pragma once

#include "ui/RulesSection.h"

#include <functional>

class QLabel;

namespace Floodgate::Ui {

class LevelsEditor;

class ThrottleRulesEditor : public RulesSection {
    Q_OBJECT

public:
    // `edited`: the whole configuration the form describes, for the names a
    // rule may not take.
    explicit ThrottleRulesEditor(std::function<Core::EngineConfig()> edited, QWidget* parent = nullptr);
    QTableWidget* moreRulesTable() const { return m_moreTable; }

    void load(const Core::EngineConfig& config) override;
    void store(Core::EngineConfig& config) const override;
    QString problem(const Core::EngineConfig& base) const override;

private:
    void showMoreRules();
    void editRule(int row);  // -1: a new rule

    std::function<Core::EngineConfig()> m_edited;
    QLabel* m_ipOff = nullptr;  // the warning: per-IP limiting is off
    LevelsEditor* m_levels = nullptr;
    std::vector<Core::ThrottleRule> m_moreRules;  // every rule but the per-IP one, in order
    QTableWidget* m_moreTable = nullptr;
};

} // namespace Floodgate::Ui
