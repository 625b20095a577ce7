// SPDX-License-Identifier: GPL-3.0-or-later
// The console's colours and icons. Colours follow the system palette: each
// meaning (allowed, throttled, blocked, dry run, safelisted) has a shade
// that reads on a light window and one that reads on a dark one.
#pragma once

#include "core/Decision.h"
#include "core/Snapshot.h"

#include <QColor>
#include <QIcon>
#include <QString>

class QWidget;

namespace Floodgate::Ui::Theme {

// Registers the icons compiled into fg_ui (idempotent; icon() calls it).
void initResources();
bool isDark();
QColor action(Core::Action action);
QColor state(Core::ClientState state);
QColor muted();      // secondary text
QColor gridLine();
// Gives a label (any widget) its text colour.
void setTextColor(QWidget* widget, const QColor& color);
// An icon from resources/icons (":/icons/NAME.svg"), tinted for dark palettes.
QIcon icon(const QString& name);
QString actionLabel(Core::Action action);   // "Allowed", "Throttled", "Blocked", "Dry run"
QString stateLabel(Core::ClientState state);  // "ok", "throttled", "blocked", "safelisted"

} // namespace Floodgate::Ui::Theme
