// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/DialogParts.h"

#include "ui/Theme.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QLabel>
#include <QPushButton>
#include <QStringList>
#include <QVBoxLayout>

namespace Floodgate::Ui {

QLabel* addProblemLabel(QVBoxLayout* layout)
{
    auto* l = new QLabel;
    l->setWordWrap(true);
    Theme::setTextColor(l, Theme::action(Core::Action::Block));
    layout->addWidget(l);
    return l;
}

QDialogButtonBox* addOkCancel(QDialog* dialog, QVBoxLayout* layout)
{
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    layout->addWidget(buttons);
    QObject::connect(buttons, &QDialogButtonBox::accepted, dialog, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
    return buttons;
}

void showProblem(QLabel* label, QDialogButtonBox* buttons, const QString& why)
{
    label->setText(why);
    label->setVisible(!why.isEmpty());
    buttons->button(QDialogButtonBox::Ok)->setEnabled(why.isEmpty());
}

QString checkName(const QString& name, int max, const QStringList& taken, const QString& what, Qt::CaseSensitivity cs)
{
    if (name.isEmpty())
        return QObject::tr("Give the %1 a name.").arg(what);
    if (name.size() > max)
        return QObject::tr("At most %1 characters.").arg(max);
    if (name.contains(QLatin1Char('/')))
        return QObject::tr("No '/' in a %1 name.").arg(what);
    for (const QString& t : taken) {
        if (t.compare(name, cs) == 0)
            return t == name ? QObject::tr("There is a %1 named %2 already.").arg(what, name)
                             : QObject::tr("There is a %1 named %2 already (%1 names are matched case-insensitively).").arg(what, t);
    }
    return {};
}

} // namespace Floodgate::Ui
