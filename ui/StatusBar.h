// SPDX-License-Identifier: GPL-3.0-or-later
// The window's status bar: the mode (and DRY RUN when on), requests and
// refusals in the last complete second, the clients seen in the last
// minute (as Live traffic's tile counts them), with --redis
// the cluster's indicator (a coloured dot, the nodes counting, Redis's
// state and round trip; a click opens the Cluster window), and the
// database file. It takes each snapshot the window receives.
#pragma once

#include <QStatusBar>

#include <array>
#include <cstdint>
#include <optional>

class QLabel;
class QToolButton;

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
    // "14 clients seen in the last minute": the Clients part, in the words
    // of Live traffic's tile (one number, one meaning).
    static QString clientsText(std::uint64_t seen);
    // The cluster indicator: hidden on a single node (no --redis).
    QToolButton* clusterIndicator() const { return m_cluster; }

Q_SIGNALS:
    void clusterClicked();

private:
    void applyCluster(const ConsoleSnapshot& s);

    const ConsoleServices& m_services;
    std::array<QLabel*, PartCount> m_parts{};
    QToolButton* m_cluster = nullptr;
    std::optional<int> m_clusterState;  // the Redis state the indicator was last drawn for
};

} // namespace Floodgate::Ui
