// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/StatusBar.h"

#include "ui/ClusterText.h"
#include "ui/ConsoleServices.h"
#include "ui/ConsoleSnapshot.h"
#include "ui/Format.h"

#include <QLabel>
#include <QPainter>
#include <QToolButton>

namespace Floodgate::Ui {

namespace {

// The database's path gives way to the other parts: it is cut in the
// middle ("Database: /home/…/floodgate.db") when the bar is short of room
// (a cluster's indicator saying what happens while Redis is down is long),
// and says all of it in its tooltip. text() stays whole.
class ElidedLabel : public QLabel {
public:
    using QLabel::QLabel;
    QSize minimumSizeHint() const override { return QSize(std::min(120, QLabel::sizeHint().width()), QLabel::minimumSizeHint().height()); }

protected:
    void paintEvent(QPaintEvent*) override
    {
        QPainter p(this);
        const QRect r = contentsRect();
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(r, int(alignment()), fontMetrics().elidedText(text(), Qt::ElideMiddle, r.width()));
    }
};

} // namespace

StatusBar::StatusBar(const ConsoleServices& services, QWidget* parent)
    : QStatusBar(parent)
    , m_services(services)
{
    // Fixed widths: the numbers change four times a second and must not
    // re-lay out the window each time. The database path keeps to the right.
    const std::array<int, PartCount> widths = {260, 280, 0, 0};
    for (std::size_t i = 0; i < m_parts.size(); ++i) {
        QLabel*& l = m_parts[i];
        l = i == Database ? new ElidedLabel : new QLabel;
        l->setContentsMargins(6, 0, 6, 0);
        if (widths[i])
            l->setFixedWidth(widths[i]);
        addWidget(l);
    }
    // As wide as the longest count it can say (a million clients).
    m_parts[Clients]->setFixedWidth(m_parts[Clients]->fontMetrics().horizontalAdvance(clientsText(1'000'000)) + 12);
    m_parts[Clients]->setToolTip(tr("Addresses (IPv6 clients per prefix) that sent a request in the last minute: the same number as "
                                    "Live traffic's tile. The Clients view says how many are tracked."));
    addPermanentWidget(m_parts[Database]);

    // With --redis only: a single node shows nothing about a cluster.
    m_cluster = new QToolButton;
    m_cluster->setObjectName(QStringLiteral("clusterIndicator"));
    m_cluster->setAutoRaise(true);
    m_cluster->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_cluster->setIconSize(QSize(12, 12));
    m_cluster->setCursor(Qt::PointingHandCursor);
    m_cluster->setFocusPolicy(Qt::TabFocus);
    m_cluster->hide();
    addWidget(m_cluster);
    connect(m_cluster, &QToolButton::clicked, this, &StatusBar::clusterClicked);
}

void StatusBar::apply(const ConsoleSnapshot& s)
{
    const bool dryRun = s.config && s.config->settings.dryRun;
    // The rates stay as they were while no second completed since the last snapshot.
    const Core::SecondCounts last = s.seconds.empty() ? Core::SecondCounts{} : s.seconds.back();
    if (!s.seconds.empty() || m_parts[Rate]->text().isEmpty()) {
        const std::uint64_t refused = last.byAction[std::size_t(Core::Action::Throttle)] + last.byAction[std::size_t(Core::Action::Block)];
        const std::uint64_t wouldBe = last.byAction[std::size_t(Core::Action::DryRun)];
        m_parts[Rate]->setText(wouldBe ? tr("%1 requests/s · %2 refused/s · %3 would be").arg(formatCount(last.total()), formatCount(refused), formatCount(wouldBe))
                                       : tr("%1 requests/s · %2 refused/s").arg(formatCount(last.total()), formatCount(refused)));
    }
    m_parts[Mode]->setText(dryRun ? tr("<b>DRY RUN</b> · %1").arg(qs(m_services.modeText)) : qs(m_services.modeText));
    m_parts[Clients]->setText(clientsText(s.buckets.keys));
    m_parts[Database]->setText(tr("Database: %1").arg(qs(m_services.databasePath)));
    m_parts[Database]->setToolTip(qs(m_services.databasePath));
    applyCluster(s);
}

void StatusBar::applyCluster(const ConsoleSnapshot& s)
{
    if (!s.cluster) {
        m_cluster->hide();
        return;
    }
    const Cluster::ClusterStatus& c = *s.cluster;
    const Core::WhenClusterDown mode = s.config ? s.config->settings.whenClusterDown : Core::WhenClusterDown::Local;
    m_cluster->setText(ClusterText::indicator(c, mode));
    m_cluster->setToolTip(ClusterText::indicatorToolTip(c, mode));
    if (m_clusterState != int(c.redis)) {
        // Redrawn when the state changes, not on every refresh.
        m_clusterState = int(c.redis);
        m_cluster->setIcon(ClusterText::dot(c.redis));
        QPalette p = palette();
        if (c.redis == ClusterText::Redis::Down)
            for (auto role : {QPalette::ButtonText, QPalette::WindowText})
                p.setColor(role, ClusterText::color(c.redis));
        m_cluster->setPalette(p);
        m_cluster->setMinimumWidth(0);
    }
    // The width only grows while the state stays (the round trip's digits
    // must not shake the bar four times a second).
    m_cluster->setMinimumWidth(std::max(m_cluster->minimumWidth(), m_cluster->sizeHint().width()));
    m_cluster->show();
}

QString StatusBar::clientsText(std::uint64_t seen)
{
    return tr("%1 clients seen in the last minute").arg(formatCount(seen));
}

QString StatusBar::text(Part part) const
{
    return m_parts[std::size_t(part)]->text();
}

} // namespace Floodgate::Ui
