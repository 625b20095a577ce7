// SPDX-License-Identifier: GPL-3.0-or-later
// Edits a list of levels ("100 per 1 min", "5,000 per 1 h"): limit, period
// with its unit, and for rules the algorithm and lockout. Says what is
// wrong (a repeated period, a missing level) while it is wrong.
#pragma once

#include <QWidget>

#include <vector>

#ifndef Q_MOC_RUN
#include "core/Rules.h"
#endif

class QTableWidget;
class QPushButton;

namespace Floodgate::Ui {

class LevelsEditor : public QWidget {
    Q_OBJECT

public:
    struct Options {
        bool algorithms = false;  // rules: algorithm + lockout columns
        bool allowEmpty = false;  // overrides may be none
    };
    explicit LevelsEditor(Options options, QWidget* parent = nullptr);

    void setLevels(const std::vector<Core::Level>& levels);
    std::vector<Core::Level> levels() const;
    // "" when the levels can be saved; otherwise what is wrong.
    QString problem() const;

Q_SIGNALS:
    void changed();

private:
    void addRow(const Core::Level& level);

    Options m_options;
    QTableWidget* m_table = nullptr;
    QPushButton* m_add = nullptr;
    QPushButton* m_remove = nullptr;
    std::vector<Core::Level> m_originals;  // names and other fields the editor does not show
};

} // namespace Floodgate::Ui
