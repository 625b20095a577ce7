// SPDX-License-Identifier: GPL-3.0-or-later
// The window's toolbar: where the listener listens (or that it is stopped)
// and its stop/start, dry run, demo traffic, block (with its menu of
// lengths), safelist, the find box and settings. The actions are the
// window's (WindowActions); the bar only lays them out and says where the
// listener is.
#pragma once

#include <QToolBar>

class QLabel;
class QLineEdit;

namespace Floodgate::Ui {

struct ConsoleServices;
struct ConsoleSnapshot;
class WindowActions;

class ToolBar : public QToolBar {
    Q_OBJECT

public:
    // `services` (the mode) outlives the bar.
    ToolBar(const WindowActions& actions, const ConsoleServices& services, QWidget* parent = nullptr);

    void apply(const ConsoleSnapshot& s);
    // Ctrl+F: the find box, its text selected.
    void focusFind();
    QLineEdit* findBox() const { return m_find; }

Q_SIGNALS:
    // Return pressed in the find box.
    void findRequested(const QString& text);

private:
    const ConsoleServices& m_services;
    QLabel* m_listenerLabel = nullptr;
    QLineEdit* m_find = nullptr;
};

} // namespace Floodgate::Ui
