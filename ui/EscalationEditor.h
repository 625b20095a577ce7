// SPDX-License-Identifier: GPL-3.0-or-later
// The escalation section of the Rules view: clients that keep being refused
// go on the blocklist, for longer on each repeat.
#pragma once

#include "ui/RulesSection.h"

namespace Floodgate::Ui {

class SettingFields;

class EscalationEditor : public RulesSection {
    Q_OBJECT

public:
    explicit EscalationEditor(QWidget* parent = nullptr);

    void load(const Core::EngineConfig& config) override;
    void store(Core::EngineConfig& config) const override;
    QString problem(const Core::EngineConfig& base) const override;

private:
    SettingFields* m_fields = nullptr;
};

} // namespace Floodgate::Ui
