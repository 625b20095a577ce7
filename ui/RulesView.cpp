// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/RulesView.h"

#include "ui/AnswersEditor.h"
#include "wire/Codec.h"
#include "ui/Console.h"
#include "ui/CooldownsEditor.h"
#include "ui/EscalationEditor.h"
#include "ui/ExclusionsEditor.h"
#include "ui/Format.h"
#include "ui/NoticeBar.h"
#include "ui/Theme.h"
#include "ui/ThrottleRulesEditor.h"
#include "ui/TryLogDialog.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

namespace Floodgate::Ui {

RulesView::RulesView(Console& console, NoticeBar& notice, QWidget* parent)
    : QWidget(parent)
    , m_console(console)
    , m_notice(notice)
{
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* page = new QWidget;
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(12, 12, 12, 12);
    scroll->setWidget(page);
    outer->addWidget(scroll, 1);

    m_rules = new ThrottleRulesEditor([this] { return edited(); });
    m_sections = {m_rules, new CooldownsEditor, new ExclusionsEditor, new AnswersEditor, new EscalationEditor};
    for (RulesSection* section : m_sections) {
        layout->addWidget(section);
        connect(section, &RulesSection::changed, this, &RulesView::markChanged);
    }
    layout->addStretch();

    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(12, 6, 12, 10);
    m_problem = new QLabel;
    m_problem->setWordWrap(true);
    m_apply = new QPushButton(Theme::icon(QStringLiteral("check")), tr("Apply"));
    m_apply->setDefault(true);
    m_revert = new QPushButton(Theme::icon(QStringLiteral("undo")), tr("Revert"));
    m_try = new QPushButton(Theme::icon(QStringLiteral("play")), tr("Try on a log…"));
    m_try->setToolTip(tr("Replay access logs through these rules and the rules in force, and see whom each would refuse, before Apply."));
    bar->addWidget(m_problem, 1);
    bar->addWidget(m_try);
    bar->addWidget(m_revert);
    bar->addWidget(m_apply);
    outer->addLayout(bar);

    connect(m_apply, &QPushButton::clicked, this, &RulesView::save);
    connect(m_revert, &QPushButton::clicked, this, &RulesView::revert);
    connect(m_try, &QPushButton::clicked, this, &RulesView::tryOnLog);
    revalidate();
}

QTableWidget* RulesView::moreRulesTable() const
{
    return m_rules->moreRulesTable();
}

void RulesView::apply(const ConsoleSnapshot& s)
{
    // Follow the stored rules while the operator is not editing them (as
    // stored: without command-line overrides such as --dry-run, which are
    // not the operator's to save).
    if (!m_dirty && s.storedConfig && s.storedConfig != m_seenConfig) {
        m_seenConfig = s.storedConfig;
        load(*s.storedConfig);
    }
}

void RulesView::load(const Core::EngineConfig& c)
{
    m_loading = true;
    m_base = c;
    for (RulesSection* section : m_sections)
        section->load(c);
    m_loading = false;
    m_dirty = false;
    revalidate();
}

Core::EngineConfig RulesView::edited() const
{
    Core::EngineConfig c = m_base;
    for (const RulesSection* section : m_sections)
        section->store(c);
    return c;
}

void RulesView::markChanged()
{
    if (!m_loading) {
        ++m_edits;
        m_dirty = true;
        revalidate();
    }
}

void RulesView::revalidate()
{
    // What a section sees wrong first (it says it in the form's words),
    // then what validate() refuses in the whole set.
    m_why.clear();
    for (const RulesSection* section : m_sections)
        if (m_why = section->problem(m_base); !m_why.isEmpty())
            break;
    if (m_why.isEmpty()) {
        if (auto invalid = Core::validate(edited()))
            m_why = qs(*invalid);
    }
    if (!m_why.isEmpty())
        m_problem->setText(QStringLiteral("<span style='color:%1'>%2</span>").arg(Theme::action(Core::Action::Block).name(), m_why.toHtmlEscaped()));
    else
        m_problem->setText(m_dirty ? tr("Changed: Apply saves it and it is in force for the next request.") : tr("These are the rules in force."));
    m_apply->setEnabled(m_dirty && m_why.isEmpty());
    m_revert->setEnabled(m_dirty);
    // Rules that do not validate cannot be replayed either.
    m_try->setEnabled(m_why.isEmpty());
}

void RulesView::save()
{
    if (!m_why.isEmpty())
        return;
    // Only what the operator changed in the form goes out, applied to the
    // rules as committed: a toggle or an API edit made meanwhile stays.
    Core::EngineConfig wanted = edited();
    const Wire::Json before = Wire::Codec::rulesToJson(m_base);
    const Wire::Json after = Wire::Codec::rulesToJson(wanted);
    Wire::Json patch = Wire::Json::object();
    for (const auto& [key, value] : after.asObject()) {
        const Wire::Json* old = before.find(key);
        if (value.isObject() && old && old->isObject()) {
            Wire::Json fields = Wire::Json::object();
            for (const auto& [field, v] : value.asObject())
                if (const Wire::Json* o = old->find(field); !o || !(*o == v))
                    fields.set(field, v);
            if (!fields.asObject().empty())
                patch.set(key, std::move(fields));
        } else if (!old || !(*old == value)) {
            patch.set(key, value);
        }
    }
    if (patch.asObject().empty()) {
        revert();
        return;
    }
    m_apply->setEnabled(false);
    const std::uint64_t generation = m_edits;
    m_console.updateRules(
        [patch](Core::EngineConfig& c) -> std::optional<std::string> {
            std::string why;
            if (!Wire::Codec::rulesFromJson(patch, c, &why))
                return why;
            return std::nullopt;
        },
        [this, saved = std::move(wanted), generation](const Storage::Outcome& o) {
            if (!o.ok()) {
                m_problem->setText(QStringLiteral("<span style='color:%1'>%2</span>")
                                       .arg(Theme::action(Core::Action::Block).name(), tr("Not saved: %1").arg(qs(o.error)).toHtmlEscaped()));
                m_apply->setEnabled(true);
                return;
            }
            // What was saved is what the next edit is compared with, even
            // before a refresh brings the stored rules back.
            m_base = saved;
            m_seenConfig = nullptr;  // the next refresh shows the rules as saved
            m_dirty = m_edits != generation;  // edited again while saving
            revalidate();
            m_notice.show(tr("Rules saved; they apply to the next request."));
        });
}

void RulesView::revert()
{
    load(m_base);
}

TryLogDialog* RulesView::tryLogDialog() const
{
    return m_tryLog.data();
}

void RulesView::tryOnLog()
{
    if (!m_why.isEmpty())
        return;
    // Both sides with the operator's safelist and blocklist as they are
    // now (not the automatic bans, which came from today's traffic), and
    // without dry run, which would let every refusal through: the question
    // is whom the rules would refuse.
    Replay::Configuration inForce, edited;
    inForce.config = m_base;
    edited.config = this->edited();
    if (const SnapshotPtr latest = m_console.latest()) {
        for (Replay::Configuration* c : {&inForce, &edited}) {
            c->safelist = latest->listSet.safelist->entries();
            c->blocklist = latest->listSet.blocklist->entries();
        }
    }
    for (Replay::Configuration* c : {&inForce, &edited})
        c->config.settings.dryRun = false;
    // One at a time: a new one replaces the last (which cancels its replay).
    if (m_tryLog)
        m_tryLog->close();
    m_tryLog = new TryLogDialog(std::move(inForce), std::move(edited), window());
    m_tryLog->setAttribute(Qt::WA_DeleteOnClose);
    m_tryLog->show();
}

} // namespace Floodgate::Ui
