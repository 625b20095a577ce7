// SPDX-License-Identifier: MIT
#include "ui/StatusBar.h"

#include "ui/ConsoleServices.h"
#include "ui/ConsoleSnapshot.h"
#include "ui/Format.h"

#include <QLabel>

namespace Floodgate::Ui {

StatusBar::StatusBar(const ConsoleServices& services, QWidget* parent)
    : QStatusBar(parent)
    , m_services(services)
{
    // Fixed widths: the numbers change four times a second and must not
    // re-lay out the window each time. The database path keeps to the right.
    const std::array<int, PartCount> widths = {260, 280, 180, 0};
    for (std::size_t i = 0; i < m_parts.size(); ++i) {
        QLabel*& l = m_parts[i];
        l = new QLabel;
        l->setContentsMargins(6, 0, 6, 0);
        if (widths[i])
            l->setFixedWidth(widths[i]);
        addWidget(l);
    }
    addPermanentWidget(m_parts[Database]);
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
    m_parts[Clients]->setText(tr("%1 clients tracked").arg(formatCount(s.counters.trackedKeys)));
    m_parts[Database]->setText(tr("Database: %1").arg(qs(m_services.databasePath)));
}

QString StatusBar::text(Part part) const
{
    return m_parts[std::size_t(part)]->text();
}

} // namespace Floodgate::Ui
