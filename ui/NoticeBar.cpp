// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/NoticeBar.h"

#include "ui/Theme.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QStyle>

namespace Floodgate::Ui {

NoticeBar::NoticeBar(Kind kind, QWidget* parent)
    : QFrame(parent)
    , m_kind(kind)
{
    setObjectName(kind == Kind::Notice ? QStringLiteral("notice") : QStringLiteral("problem"));
    const QColor accent = kind == Kind::Notice ? Theme::action(Core::Action::Allow) : Theme::action(Core::Action::Block);
    QColor background = accent;
    background.setAlphaF(0.14f);
    setStyleSheet(QStringLiteral("QFrame#%1 { background: %2; border: 1px solid %3; border-radius: 4px; }")
                      .arg(objectName(), background.name(QColor::HexArgb), accent.name()));
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(10, 4, 4, 4);
    m_icon = new QLabel;
    m_icon->setPixmap(Theme::icon(kind == Kind::Notice ? QStringLiteral("check") : QStringLiteral("warning")).pixmap(18, 18));
    m_text = new QLabel;
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_undoButton = new QPushButton(Theme::icon(QStringLiteral("undo")), tr("Undo"));
    m_undoButton->setShortcut(QKeySequence::Undo);
    m_undoButton->setToolTip(tr("Take the change back (Ctrl+Z)"));
    m_close = new QPushButton(Theme::icon(QStringLiteral("close")), QString());
    m_close->setFlat(true);
    m_close->setToolTip(tr("Dismiss"));
    layout->addWidget(m_icon);
    layout->addWidget(m_text, 1);
    layout->addWidget(m_undoButton);
    layout->addWidget(m_close);
    connect(m_undoButton, &QPushButton::clicked, this, &NoticeBar::undo);
    connect(m_close, &QPushButton::clicked, this, &QWidget::hide);
    m_hide.setSingleShot(true);
    connect(&m_hide, &QTimer::timeout, this, &QWidget::hide);
    hide();
}

void NoticeBar::show(const QString& text, std::function<void()> undo)
{
    m_text->setText(text);
    m_undo = std::move(undo);
    m_undoButton->setVisible(bool(m_undo));
    m_undoButton->setEnabled(bool(m_undo));
    QFrame::show();
    if (m_kind == Kind::Notice)
        m_hide.start(m_undo ? 15'000 : 6'000);
}

QString NoticeBar::text() const
{
    return m_text->text();
}

void NoticeBar::undo()
{
    if (!m_undo)
        return;
    auto undo = std::move(m_undo);
    m_undo = {};
    m_undoButton->setEnabled(false);
    undo();
}

} // namespace Floodgate::Ui
