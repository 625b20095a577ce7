// SPDX-License-Identifier: GPL-3.0-or-later
// The cooldowns section of the Rules view: once an action succeeded, the
// same user may not repeat it for a while. A table edited in place.
#pragma once

#include "ui/RulesSection.h"

namespace Floodgate::Ui {

class CooldownsEditor : public RulesSection {
    Q_OBJECT

public:
    explicit CooldownsEditor(QWidget* parent = nullptr);

    void load(const Core::EngineConfig& config) override;
    void store(Core::EngineConfig& config) const override;
    QString problem(const Core::EngineConfig& base) const override;

private:
    QTableWidget* m_table = nullptr;
};

} // namespace Floodgate::Ui
