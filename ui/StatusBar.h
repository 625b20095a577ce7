// SPDX-License-Identifier: MIT
// The window's status bar: the mode (and DRY RUN when on), requests and
// refusals in the last complete second, the clients tracked, and the
// database file. It takes each snapshot the window receives.
#pragma once

#include <QStatusBar>

#include <array>

class QLabel;

namespace Floodgate::Ui {

struct ConsoleServices;
struct ConsoleSnapshot;

class StatusBar : public QStatusBar {
    Q_OBJECT

public:
    enum Part { Mode, Rate, Clients, Database, PartCount };

    // `services` (the mode and the database path) outlives the bar.
    explicit StatusBar(const ConsoleServices& services, QWidget* parent = nullptr);

    void apply(const ConsoleSnapshot& s);
    // What a part says now (rich text where it is bold).
    QString text(Part part) const;

private:
    const ConsoleServices& m_services;
    std::array<QLabel*, PartCount> m_parts{};
};

} // namespace Floodgate::Ui
