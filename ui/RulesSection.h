// SPDX-License-Identifier: GPL-3.0-or-later
// One section of the Rules view — the per-IP and other rules, cooldowns,
// what is not counted, answers and clients, escalation: it shows its part
// of the rules, writes it back and says what is wrong with it. RulesView
// stacks the sections and owns Apply and Revert.
#pragma once

#include <QWidget>

#ifndef Q_MOC_RUN
#include "core/Rules.h"
#endif

#include <string>
#include <vector>

class QGroupBox;
class QPlainTextEdit;
class QTableWidget;

namespace Floodgate::Ui {

class RulesSection : public QWidget {
    Q_OBJECT

public:
    explicit RulesSection(QWidget* parent = nullptr);

    // Shows its part of `config`.
    virtual void load(const Core::EngineConfig& config) = 0;
    // Writes what it shows into `config`: a copy of the rules as loaded or
    // last saved, so what the section does not show stays as stored.
    virtual void store(Core::EngineConfig& config) const = 0;
    // "" when what it shows can be saved; otherwise what is wrong, for
    // people. `base`: the rules as loaded or last saved.
    virtual QString problem(const Core::EngineConfig& base) const;

Q_SIGNALS:
    void changed();

protected:
    // A titled box, stacked below the section's others.
    QGroupBox* addBox(const QString& title);
};

// The non-empty lines of `edit`, trimmed.
QStringList nonEmptyLines(const QPlainTextEdit* edit);
std::vector<std::string> toStdStrings(const QStringList& list);
// One per line.
QString joinedLines(const std::vector<std::string>& list);
// Appends a row of plain cells.
void appendRow(QTableWidget* table, const QStringList& cells);

} // namespace Floodgate::Ui
