// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/CooldownsEditor.h"

#include "ui/Format.h"
#include "ui/Theme.h"

#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace Floodgate::Ui {

namespace {

enum CooldownColumn { CdName, CdMethod, CdPath, CdSeconds, CdUserHeader, CdColumns };

} // namespace

CooldownsEditor::CooldownsEditor(QWidget* parent)
    : RulesSection(parent)
{
    auto* layout = new QVBoxLayout(addBox(tr("Cooldowns: once an action succeeded, the same user may not repeat it for a while")));
    m_table = new QTableWidget(0, CdColumns);
    m_table->setHorizontalHeaderLabels({tr("Name"), tr("Method"), tr("Path (glob)"), tr("Seconds"), tr("User header")});
    m_table->horizontalHeader()->setSectionResizeMode(CdPath, QHeaderView::Stretch);
    m_table->horizontalHeader()->setSectionResizeMode(CdUserHeader, QHeaderView::Stretch);
    m_table->verticalHeader()->hide();
    m_table->setMinimumHeight(90);
    layout->addWidget(m_table);
    auto* buttons = new QHBoxLayout;
    auto* add = new QPushButton(Theme::icon(QStringLiteral("add")), tr("Add cooldown"));
    auto* remove = new QPushButton(Theme::icon(QStringLiteral("remove")), tr("Remove"));
    buttons->addWidget(add);
    buttons->addWidget(remove);
    buttons->addStretch();
    layout->addLayout(buttons);

    connect(m_table, &QTableWidget::cellChanged, this, &RulesSection::changed);
    connect(add, &QPushButton::clicked, this, [this] {
        appendRow(m_table, {QStringLiteral("new"), QStringLiteral("POST"), QStringLiteral("/path"), QStringLiteral("30"),
                            QStringLiteral("X-User-Id")});
        Q_EMIT changed();
    });
    connect(remove, &QPushButton::clicked, this, [this] {
        if (m_table->currentRow() >= 0) {
            m_table->removeRow(m_table->currentRow());
            Q_EMIT changed();
        }
    });
}

void CooldownsEditor::load(const Core::EngineConfig& c)
{
    m_table->setRowCount(0);
    for (const Core::Cooldown& cd : c.cooldowns)
        appendRow(m_table, {qs(cd.name), qs(cd.method), qs(cd.pathGlob), QString::number(cd.durationMs / 1000.0), qs(cd.userHeader)});
}

void CooldownsEditor::store(Core::EngineConfig& c) const
{
    c.cooldowns.clear();
    for (int row = 0; row < m_table->rowCount(); ++row) {
        auto text = [&](int col) { return m_table->item(row, col) ? m_table->item(row, col)->text().trimmed() : QString(); };
        Core::Cooldown cd;
        cd.name = text(CdName).toStdString();
        cd.method = text(CdMethod).toUpper().toStdString();
        cd.pathGlob = text(CdPath).toStdString();
        cd.durationMs = Core::Millis(text(CdSeconds).toDouble() * 1000.0);
        cd.userHeader = text(CdUserHeader).toStdString();
        c.cooldowns.push_back(cd);
    }
}

QString CooldownsEditor::problem(const Core::EngineConfig&) const
{
    for (int row = 0; row < m_table->rowCount(); ++row) {
        bool ok = false;
        const double secs = m_table->item(row, CdSeconds) ? m_table->item(row, CdSeconds)->text().toDouble(&ok) : 0;
        if (!ok || secs <= 0)
            return tr("Cooldown %1: the seconds must be a number above 0.").arg(row + 1);
    }
    return {};
}

} // namespace Floodgate::Ui
