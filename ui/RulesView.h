// SPDX-License-Identifier: GPL-3.0-or-later
// Everything the operator configures besides tiers: the per-IP levels and
// their algorithms, cooldowns, what is not counted, how refusals are
// answered, who is a trusted proxy, the IPv6 prefix, escalation — one
// section each (RulesSection.h), stacked here. Apply is enabled only while
// the whole set is valid; it is saved, audited and in force for the next
// request.
#pragma once

#include <QPointer>
#include <QWidget>

#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#endif

#include <vector>

class QLabel;
class QPushButton;
class QTableWidget;

namespace Floodgate::Ui {

class Console;
class NoticeBar;
class RulesSection;
class ThrottleRulesEditor;
class TryLogDialog;

class RulesView : public QWidget {
    Q_OBJECT

public:
    RulesView(Console& console, NoticeBar& notice, QWidget* parent = nullptr);
    QTableWidget* moreRulesTable() const;
    void apply(const ConsoleSnapshot& snapshot);

    // The configuration the form describes now (tiers and customers as stored).
    Core::EngineConfig edited() const;
    QString problem() const { return m_why; }
    bool dirty() const { return m_dirty; }

    // The "Try on a log…" window (null until opened; it deletes itself when closed).
    TryLogDialog* tryLogDialog() const;

public Q_SLOTS:
    void save();
    void revert();
    // Opens "Try on a log…" for the rules in force and the form as edited now.
    void tryOnLog();

private:
    void load(const Core::EngineConfig& config);
    void revalidate();
    void markChanged();

    Console& m_console;
    NoticeBar& m_notice;
    Core::EngineConfig m_base;  // what the form was loaded from
    std::shared_ptr<const Core::EngineConfig> m_seenConfig;  // the stored rules last shown
    bool m_dirty = false;
    std::uint64_t m_edits = 0;  // changes made in the form, to tell an edit made while saving
    bool m_loading = false;
    QString m_why;

    ThrottleRulesEditor* m_rules = nullptr;
    std::vector<RulesSection*> m_sections;  // top to bottom, m_rules first
    QLabel* m_problem = nullptr;
    QPushButton* m_apply = nullptr;
    QPushButton* m_revert = nullptr;
    QPushButton* m_try = nullptr;
    QPointer<TryLogDialog> m_tryLog;
};

} // namespace Floodgate::Ui
