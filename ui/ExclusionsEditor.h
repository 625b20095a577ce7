// SPDX-License-Identifier: GPL-3.0-or-later
// The "Not counted" section of the Rules view: excluded paths, safe user
// agents, and counting only requests without cookies.
#pragma once

#include "ui/RulesSection.h"

namespace Floodgate::Ui {

class SettingFields;

class ExclusionsEditor : public RulesSection {
    Q_OBJECT

public:
    explicit ExclusionsEditor(QWidget* parent = nullptr);

    void load(const Core::EngineConfig& config) override;
    void store(Core::EngineConfig& config) const override;

private:
    SettingFields* m_fields = nullptr;
    QPlainTextEdit* m_excluded = nullptr;
    QPlainTextEdit* m_safeAgents = nullptr;
};

} // namespace Floodgate::Ui
