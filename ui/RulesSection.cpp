// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/RulesSection.h"

#include "ui/Format.h"

#include <QGroupBox>
#include <QPlainTextEdit>
#include <QTableWidget>
#include <QVBoxLayout>

namespace Floodgate::Ui {

RulesSection::RulesSection(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
}

QString RulesSection::problem(const Core::EngineConfig&) const
{
    return {};
}

QGroupBox* RulesSection::addBox(const QString& title)
{
    auto* box = new QGroupBox(title);
    layout()->addWidget(box);
    return box;
}

QStringList nonEmptyLines(const QPlainTextEdit* edit)
{
    QStringList out;
    for (const QString& l : edit->toPlainText().split(QLatin1Char('\n')))
        if (!l.trimmed().isEmpty())
            out << l.trimmed();
    return out;
}

std::vector<std::string> toStdStrings(const QStringList& list)
{
    std::vector<std::string> out;
    for (const QString& s : list)
        out.push_back(s.toStdString());
    return out;
}

QString joinedLines(const std::vector<std::string>& list)
{
    QStringList out;
    for (const auto& s : list)
        out << qs(s);
    return out.join(QLatin1Char('\n'));
}

void appendRow(QTableWidget* table, const QStringList& cells)
{
    const int row = table->rowCount();
    table->insertRow(row);
    for (int col = 0; col < cells.size(); ++col)
        table->setItem(row, col, new QTableWidgetItem(cells[col]));
}

} // namespace Floodgate::Ui
