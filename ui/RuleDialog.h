// SPDX-License-Identifier: GPL-3.0-or-later
// Edit one throttle rule besides the per-IP one: what it counts by (address
// + user agent, or a header's value such as an API key), which requests it
// applies to (method, path glob) and its levels. OK stays disabled, with the
// reason shown, while the rule cannot be saved.
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

class RuleDialog : public QDialog {
    Q_OBJECT

public:
    // `existing` null: a new rule. `taken`: names already in use.
    RuleDialog(const Core::ThrottleRule* existing, QStringList taken, QWidget* parent = nullptr);
    Core::ThrottleRule rule() const;
    QString problem() const { return m_why; }

    QLineEdit* nameEdit() const { return m_name; }
    QComboBox* countedBy() const { return m_countedBy; }
    QLineEdit* headerEdit() const { return m_header; }
    QLineEdit* pathEdit() const { return m_path; }
    LevelsEditor* levels() const { return m_levels; }

    // One line for a table: "X-Api-Key header", "address + user agent".
    static QString describeKey(const Core::ThrottleRule& rule);
    // "POST /login*", "any request".
    static QString describeScope(const Core::ThrottleRule& rule);

private:
    void revalidate();

    Core::ThrottleRule m_original;  // fields the dialog does not show
    QLineEdit* m_name = nullptr;
    QComboBox* m_countedBy = nullptr;
    QLineEdit* m_header = nullptr;
    QComboBox* m_method = nullptr;
    QLineEdit* m_path = nullptr;
    LevelsEditor* m_levels = nullptr;
    QLabel* m_problem = nullptr;
    QDialogButtonBox* m_buttons = nullptr;
    QStringList m_taken;
    QString m_why;
};

} // namespace Floodgate::Ui
