// SPDX-License-Identifier: GPL-3.0-or-later
// Two strips above the views. The notice: "Blocked 203.0.113.66 for 7 days
// — Undo", shown after the change is committed and gone by itself after a
// while (an undoable notice rather than a modal wall). The banner: a
// problem the operator must read (a write that failed, a listener that
// stopped), until it is dismissed.
#pragma once

#include <QFrame>
#include <QTimer>

#include <functional>

class QLabel;
class QPushButton;

namespace Floodgate::Ui {

class NoticeBar : public QFrame {
    Q_OBJECT

public:
    enum class Kind { Notice, Problem };
    explicit NoticeBar(Kind kind, QWidget* parent = nullptr);

    // Shows `text`; with `undo`, an Undo button that runs it once.
    void show(const QString& text, std::function<void()> undo = {});
    QString text() const;
    bool canUndo() const { return bool(m_undo); }
    void undo();

private:
    Kind m_kind;
    QLabel* m_icon = nullptr;
    QLabel* m_text = nullptr;
    QPushButton* m_undoButton = nullptr;
    QPushButton* m_close = nullptr;
    std::function<void()> m_undo;
    QTimer m_hide;
};

} // namespace Floodgate::Ui
