// SPDX-License-Identifier: MIT
// Everything the operator configures besides tiers: the per-IP levels and
// their algorithms, cooldowns, what is not counted, how refusals are
// answered, who is a trusted proxy, the IPv6 prefix, escalation. Apply is
// enabled only while the whole set is valid; it is saved, audited and in
// force for the next request.
#pragma once

#include <QWidget>

#ifndef Q_MOC_RUN
#include "ConsoleSnapshot.h"
#endif

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace Floodgate::Ui {

class Console;
class LevelsEditor;
class NoticeBar;

class RulesView : public QWidget {
    Q_OBJECT

public:
    RulesView(Console& console, NoticeBar& notice, QWidget* parent = nullptr);
    QTableWidget* moreRulesTable() const { return m_moreTable; }
    void apply(const ConsoleSnapshot& snapshot);

    // The configuration the form describes now (tiers and customers as stored).
    Core::EngineConfig edited() const;
    QString problem() const { return m_why; }
    bool dirty() const { return m_dirty; }

public Q_SLOTS:
    void save();
    void revert();

private:
    void load(const Core::EngineConfig& config);
    void revalidate();
    void markChanged();
    void showMoreRules();
    void editRule(int row);  // -1: a new rule

    Console& m_console;
    NoticeBar& m_notice;
    Core::EngineConfig m_base;  // what the form was loaded from
    std::shared_ptr<const Core::EngineConfig> m_seenConfig;  // the stored rules last shown
    bool m_dirty = false;
    std::uint64_t m_edits = 0;  // changes made in the form, to tell an edit made while saving
    bool m_loading = false;
    QString m_why;

    QLabel* m_ipOff = nullptr;  // the warning: per-IP limiting is off
    LevelsEditor* m_levels = nullptr;
    std::vector<Core::ThrottleRule> m_moreRules;  // every rule but the per-IP one, in order
    QTableWidget* m_moreTable = nullptr;
    QTableWidget* m_cooldowns = nullptr;
    QPlainTextEdit* m_excluded = nullptr;
    QPlainTextEdit* m_safeAgents = nullptr;
    QCheckBox* m_cookieless = nullptr;
    QComboBox* m_status = nullptr;
    QCheckBox* m_dryRun = nullptr;
    QCheckBox* m_headers = nullptr;
    QPlainTextEdit* m_proxies = nullptr;
    QSpinBox* m_ipv6Prefix = nullptr;
    QComboBox* m_customerSource = nullptr;
    QCheckBox* m_escalation = nullptr;
    QSpinBox* m_refusals = nullptr;
    QSpinBox* m_find = nullptr;
    QSpinBox* m_ban = nullptr;
    QSpinBox* m_maxBan = nullptr;
    QLabel* m_problem = nullptr;
    QPushButton* m_apply = nullptr;
    QPushButton* m_revert = nullptr;
};

} // namespace Floodgate::Ui
