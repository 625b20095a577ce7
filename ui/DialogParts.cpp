// SPDX-License-Identifier: MIT
#include "DialogParts.h"

#include "Theme.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QLabel>
#include <QVBoxLayout>

namespace Floodgate::Ui {

QLabel* addProblemLabel(QVBoxLayout* layout)
{
    auto* l = new QLabel;
    l->setWordWrap(true);
    QPalette p = l->palette();
    p.setColor(QPalette::WindowText, Theme::action(Core::Action::Block));
    l->setPalette(p);
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

} // namespace Floodgate::Ui
