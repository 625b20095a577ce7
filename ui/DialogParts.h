// SPDX-License-Identifier: GPL-3.0-or-later
// What every editing dialog of the console has: the line that says why OK
// is disabled, and OK / Cancel wired to accept and reject.
#pragma once

#include <QtContainerFwd>
#include <QString>

class QDialog;
class QString;
class QDialogButtonBox;
class QLabel;
class QVBoxLayout;

namespace Floodgate::Ui {

// A red, word-wrapped label for "what is wrong", added to `layout`.
QLabel* addProblemLabel(QVBoxLayout* layout);
// OK and Cancel, added to `layout`, accepting and rejecting `dialog`.
QDialogButtonBox* addOkCancel(QDialog* dialog, QVBoxLayout* layout);
// Shows `why` (hidden when empty) and enables OK only when it is empty.
void showProblem(QLabel* label, QDialogButtonBox* buttons, const QString& why);
// "" when `name` can name a `what` (tier, customer, rule): not empty, at most
// `max` characters, no '/' (names are path segments in the API), not taken.
// `cs` Qt::CaseInsensitive for tier names (one namespace: the store takes
// "pro" for "Pro", Core::findTier), which a new tier must not reuse.
QString checkName(const QString& name, int max, const QStringList& taken, const QString& what, Qt::CaseSensitivity cs = Qt::CaseSensitive);

} // namespace Floodgate::Ui
