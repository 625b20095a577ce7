// SPDX-License-Identifier: GPL-3.0-or-later
// The "Answers and clients" section of the Rules view: how refusals are
// answered (status, dry run, RateLimit headers), whose forwarding headers
// are believed, how clients are counted and where a customer is named.
#pragma once

#include "ui/RulesSection.h"

namespace Floodgate::Ui {

class SettingFields;

class AnswersEditor : public RulesSection {
    Q_OBJECT

public:
    explicit AnswersEditor(QWidget* parent = nullptr);

    void load(const Core::EngineConfig& config) override;
    void store(Core::EngineConfig& config) const override;
    QString problem(const Core::EngineConfig& base) const override;

private:
    SettingFields* m_fields = nullptr;
    QPlainTextEdit* m_proxies = nullptr;  // a list of ranges: one per line, checked as typed
};

} // namespace Floodgate::Ui
