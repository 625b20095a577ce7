// SPDX-License-Identifier: GPL-3.0-or-later
// Edit a tier (its levels) or a customer (tier and overrides). OK stays
// disabled, with the reason shown, while the input cannot be saved.
#pragma once

#include <QDialog>

#ifndef Q_MOC_RUN
#include "core/Rules.h"
#endif

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;

namespace Floodgate::Ui {

class LevelsEditor;

class TierDialog : public QDialog {
    Q_OBJECT

public:
    // `existing` null: a new tier. `taken`: names already in use.
    TierDialog(const Core::Tier* existing, QStringList taken, QWidget* parent = nullptr);
    Core::Tier tier() const;
    QString problem() const { return m_why; }
    LevelsEditor* levels() const { return m_levels; }
    QLineEdit* nameEdit() const { return m_name; }

private:
    void revalidate();
    QLineEdit* m_name = nullptr;
    LevelsEditor* m_levels = nullptr;
    QLabel* m_problem = nullptr;
    QDialogButtonBox* m_buttons = nullptr;
    QStringList m_taken;
    QString m_why;
};

class CustomerDialog : public QDialog {
    Q_OBJECT

public:
    CustomerDialog(const Core::Customer* existing, const std::vector<Core::Tier>& tiers, QStringList taken, QWidget* parent = nullptr);
    Core::Customer customer() const;
    QString problem() const { return m_why; }

private:
    void revalidate();
    QLineEdit* m_id = nullptr;
    QLineEdit* m_name = nullptr;
    QComboBox* m_tier = nullptr;
    LevelsEditor* m_overrides = nullptr;
    QLabel* m_effective = nullptr;
    QLabel* m_problem = nullptr;
    QDialogButtonBox* m_buttons = nullptr;
    std::vector<Core::Tier> m_tiers;
    QStringList m_taken;
    QString m_why;
};

} // namespace Floodgate::Ui
