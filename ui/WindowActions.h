// SPDX-License-Identifier: GPL-3.0-or-later
// The console window's actions, each a member made once: the toolbar, the
// clients' context menu and the shortcuts hold these very objects. What
// they do is the window's business (MainWindow connects them); what they
// look like, and how the listener, dry run and demo ones follow each
// snapshot, is here. Each keeps a stable objectName ("block7d", "dryRun", ...).
#pragma once

#include <QCoreApplication>

class QAction;
class QObject;

namespace Floodgate::Ui {

struct ConsoleServices;
struct ConsoleSnapshot;

class WindowActions {
    Q_DECLARE_TR_FUNCTIONS(WindowActions)

public:
    // The actions are children of `owner`.
    explicit WindowActions(QObject* owner);

    // The listener's text and icon, dry run and demo checked and enabled as the snapshot says.
    void apply(const ConsoleSnapshot& s, const ConsoleServices& services);

    QAction* const block7d;
    QAction* const block24h;
    QAction* const block1h;
    QAction* const blockCustom;  // the dialog: either list, a reason, any length
    QAction* const safelist7d;
    QAction* const removeFromList;
    QAction* const copyAddress;
    QAction* const showBuckets;
    QAction* const listener;  // stop or start: its text and icon follow the listener
    QAction* const dryRun;    // checkable, saved with the rules
    QAction* const demo;      // checkable
    QAction* const find;
    QAction* const settings;
    QAction* const about;     // the version and the license

private:
    int m_listenerShown = -1;  // the listener action shows: 1 stop, 0 start, -1 not yet
};

} // namespace Floodgate::Ui
