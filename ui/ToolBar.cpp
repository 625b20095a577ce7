// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/ToolBar.h"

#include "ui/ConsoleServices.h"
#include "ui/ConsoleSnapshot.h"
#include "ui/Format.h"
#include "ui/Theme.h"
#include "ui/WindowActions.h"

#include <QAction>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QStyle>
#include <QToolButton>

namespace Floodgate::Ui {

ToolBar::ToolBar(const WindowActions& actions, const ConsoleServices& services, QWidget* parent)
    : QToolBar(tr("Main"), parent)
    , m_services(services)
{
    setObjectName(QStringLiteral("main toolbar"));
    setMovable(false);
    setIconSize(QSize(20, 20));
    setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_listenerLabel = new QLabel;
    m_listenerLabel->setContentsMargins(8, 0, 8, 0);
    m_listenerLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    addWidget(m_listenerLabel);
    addAction(actions.listener);
    addSeparator();
    addAction(actions.dryRun);
    addAction(actions.demo);
    addSeparator();
    auto* block = new QToolButton;
    block->setDefaultAction(actions.block7d);
    block->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    block->setPopupMode(QToolButton::MenuButtonPopup);
    auto* menu = new QMenu(block);
    menu->addActions({actions.block1h, actions.block24h, actions.block7d, actions.blockCustom});
    block->setMenu(menu);
    addWidget(block);
    addAction(actions.safelist7d);
    auto* spacer = new QWidget;
    spacer->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    addWidget(spacer);
    m_find = new QLineEdit;
    m_find->setPlaceholderText(tr("Find address (Ctrl+F)"));
    m_find->setClearButtonEnabled(true);
    m_find->addAction(Theme::icon(QStringLiteral("find")), QLineEdit::LeadingPosition);
    // Never narrower than what it says while empty: the search icon and the
    // clear button each take an icon's width and a margin on their side.
    const int icons = 2 * (m_find->style()->pixelMetric(QStyle::PM_SmallIconSize, nullptr, m_find) + 8);
    const int wanted = m_find->fontMetrics().horizontalAdvance(m_find->placeholderText()) + icons + 16;
    m_find->setMinimumWidth(wanted);
    m_find->setMaximumWidth(std::max(240, wanted));
    addWidget(m_find);
    // Settings and About as icons (named in their tooltips): the bar keeps
    // every button and the find box whole from 1280 pixels wide.
    for (QAction* a : {actions.settings, actions.about}) {
        addAction(a);
        if (auto* button = qobject_cast<QToolButton*>(widgetForAction(a)))
            button->setToolButtonStyle(Qt::ToolButtonIconOnly);
    }
    connect(m_find, &QLineEdit::returnPressed, this, [this] { Q_EMIT findRequested(m_find->text()); });
}

void ToolBar::apply(const ConsoleSnapshot& s)
{
    m_listenerLabel->setText(s.listening ? tr("Listening on <b>%1</b> · %2").arg(s.listenUrl, qs(m_services.modeText))
                                         : tr("<span style='color:%1'>Listener stopped</span> (%2)")
                                               .arg(Theme::action(Core::Action::Block).name(), s.listenUrl));
}

void ToolBar::focusFind()
{
    m_find->setFocus();
    m_find->selectAll();
}

} // namespace Floodgate::Ui
