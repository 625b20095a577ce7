// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/WindowActions.h"

#include "ui/ConsoleServices.h"
#include "ui/ConsoleSnapshot.h"
#include "ui/Theme.h"

#include <QAction>

namespace Floodgate::Ui {

namespace {

QAction* make(QObject* owner, const char* name, const char* icon, const QString& text, const QString& tip,
              const QKeySequence& shortcut = {}, bool checkable = false)
{
    auto* a = new QAction(Theme::icon(QLatin1String(icon)), text, owner);
    a->setObjectName(QLatin1String(name));
    a->setToolTip(tip);
    a->setStatusTip(tip);
    a->setShortcut(shortcut);
    a->setCheckable(checkable);
    return a;
}

} // namespace

WindowActions::WindowActions(QObject* owner)
    : block7d(make(owner, "block7d", "block", tr("Block for 7 days"),
                   tr("Refuse every request from the selected clients with 403 for 7 days (Ctrl+B)"), QKeySequence(Qt::CTRL | Qt::Key_B)))
    , block24h(make(owner, "block24h", "block", tr("Block for 24 hours"), tr("Block the selected clients for 24 hours")))
    , block1h(make(owner, "block1h", "block", tr("Block for 1 hour"), tr("Block the selected clients for 1 hour")))
    , blockCustom(make(owner, "blockCustom", "edit", tr("Block or safelist…"), tr("Choose the list, the reason and how long")))
    , safelist7d(make(owner, "safelist7d", "safelist", tr("Safelist for 7 days"), tr("Never throttle the selected clients, for 7 days (Ctrl+L)"),
                      QKeySequence(Qt::CTRL | Qt::Key_L)))
    , removeFromList(make(owner, "removeFromList", "remove", tr("Remove from list"), tr("Take the selected clients off the blocklist or safelist")))
    , copyAddress(make(owner, "copyAddress", "copy", tr("Copy address"), tr("Copy the selected addresses")))
    , showBuckets(make(owner, "showBuckets", "buckets", tr("Show buckets"), tr("See the selected client's levels bucket by bucket")))
    , listener(make(owner, "listener", "stop", tr("Stop listener"), tr("Stop or start the traffic listener")))
    , dryRun(make(owner, "dryRun", "dryrun", tr("Dry run"), tr("Decide and log, refuse nothing (saved with the rules)"), {}, true))
    , demo(make(owner, "demo", "demo", tr("Demo traffic"),
                tr("Drive synthetic traffic into the listener: browsers, a good bot, a scraper flood, API customers"), {}, true))
    , find(make(owner, "find", "find", tr("Find address"), tr("Find a client by address (Ctrl+F)"), QKeySequence::Find))
    , settings(make(owner, "settings", "settings", tr("Settings"), tr("Database, admin API and its token")))
    , about(make(owner, "about", "floodgate", tr("About"), tr("Floodgate's version and license")))
{
}

void WindowActions::apply(const ConsoleSnapshot& s, const ConsoleServices& services)
{
    if (const int state = s.listening ? 1 : 0; state != m_listenerShown) {  // not on every tick: each set repaints the toolbar
        m_listenerShown = state;
        listener->setText(s.listening ? tr("Stop listener") : tr("Start listener"));
        listener->setIcon(Theme::icon(s.listening ? QStringLiteral("stop") : QStringLiteral("play")));
    }
    listener->setEnabled(bool(services.setListening));
    dryRun->setChecked(s.config && s.config->settings.dryRun);
    dryRun->setEnabled(!services.dryRunForced);
    if (services.dryRunForced)
        dryRun->setToolTip(tr("Dry run is on from the command line (--dry-run); it cannot be turned off here"));
    demo->setChecked(s.demo);
    demo->setEnabled(bool(services.setDemo) && s.listening);
}

} // namespace Floodgate::Ui
