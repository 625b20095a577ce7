// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/SettingsDialog.h"

#include "ui/Console.h"
#include "ui/Format.h"
#include "ui/Theme.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace Floodgate::Ui {

SettingsDialog::SettingsDialog(const Console& console, QWidget* parent)
    : QDialog(parent)
{
    setWindowTitle(tr("Floodgate settings"));
    const ConsoleServices& s = console.services();
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    auto field = [](const QString& text) {
        auto* l = new QLineEdit(text);
        l->setReadOnly(true);
        l->setMinimumWidth(420);
        return l;
    };
    form->addRow(tr("Database"), field(qs(s.databasePath)));
    form->addRow(tr("Limiter log"), field(s.logPath.empty() ? tr("off") : qs(s.logPath)));
    form->addRow(tr("Listener"), field((s.listenUrl ? qs(s.listenUrl()) : QString()) + QStringLiteral("  (") + qs(s.modeText) + QLatin1Char(')')));
    form->addRow(tr("Admin API"), field(s.adminUrl.empty() ? tr("off") : qs(s.adminUrl)));
    auto* tokenRow = new QHBoxLayout;
    auto* token = field(qs(s.store ? s.store->adminToken() : std::string()));
    token->setEchoMode(QLineEdit::Password);
    auto* reveal = new QPushButton(tr("Show"));
    reveal->setCheckable(true);
    auto* copy = new QPushButton(Theme::icon(QStringLiteral("copy")), tr("Copy"));
    tokenRow->addWidget(token, 1);
    tokenRow->addWidget(reveal);
    tokenRow->addWidget(copy);
    form->addRow(tr("Admin token"), tokenRow);
    layout->addLayout(form);
    auto* note = new QLabel(s.adminBeyondLoopback
                                ? tr("The admin API listens beyond loopback: every request, /healthz and /metrics included, must "
                                     "carry \"Authorization: Bearer\" and this token.")
                                : tr("Every admin API request must carry \"Authorization: Bearer\" and this token (scripts read it "
                                     "with `floodgate token`); /healthz and /metrics on loopback need none."));
    note->setWordWrap(true);
    layout->addWidget(note);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(reveal, &QPushButton::toggled, token, [token](bool on) { token->setEchoMode(on ? QLineEdit::Normal : QLineEdit::Password); });
    connect(copy, &QPushButton::clicked, token, [token] { QApplication::clipboard()->setText(token->text()); });
}

} // namespace Floodgate::Ui
