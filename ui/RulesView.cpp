// SPDX-License-Identifier: MIT
#include "RulesView.h"

#include "Codec.h"
#include "Console.h"
#include "Format.h"
#include "LevelsEditor.h"
#include "NoticeBar.h"
#include "RuleDialog.h"
#include "Theme.h"
#include "TierModels.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace Floodgate::Ui {

namespace {

enum CooldownColumn { CdName, CdMethod, CdPath, CdSeconds, CdUserHeader, CdColumns };
enum MoreColumn { MoreName, MoreKey, MoreScope, MoreLevels, MoreColumns };

QStringList lines(const QPlainTextEdit* edit)
{
    QStringList out;
    for (const QString& l : edit->toPlainText().split(QLatin1Char('\n')))
        if (!l.trimmed().isEmpty())
            out << l.trimmed();
    return out;
}

std::vector<std::string> toStd(const QStringList& list)
{
    std::vector<std::string> out;
    for (const QString& s : list)
        out.push_back(s.toStdString());
    return out;
}

QString joined(const std::vector<std::string>& v)
{
    QStringList out;
    for (const auto& s : v)
        out << qs(s);
    return out.join(QLatin1Char('\n'));
}

// Appends a row of plain cells.
void appendRow(QTableWidget* table, const QStringList& cells)
{
    const int row = table->rowCount();
    table->insertRow(row);
    for (int col = 0; col < cells.size(); ++col)
        table->setItem(row, col, new QTableWidgetItem(cells[col]));
}

QSpinBox* seconds(int max)
{
    auto* s = new QSpinBox;
    s->setRange(1, max);
    s->setSuffix(QObject::tr(" s"));
    s->setGroupSeparatorShown(true);
    return s;
}

} // namespace

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

    auto* ip = new QGroupBox(tr("Per-IP limits (anonymous clients)"));
    auto* ipLayout = new QVBoxLayout(ip);
    ipLayout->addWidget(new QLabel(tr("A request passes while every level has room. Several levels make an exponential back-off "
                                      "(6 / 3 s, 300 / 5 min, 600 / 30 min). IPv6 clients are counted per prefix.")));
    // Said where the levels would be: with none, no anonymous client is
    // limited (only the API can store that, with "ip_levels_disabled").
    m_ipOff = new QLabel(tr("Per-IP limiting is off: anonymous clients are limited by no level here, only by the rules below "
                            "that match them. Add a level to turn it on."));
    m_ipOff->setObjectName(QStringLiteral("perIpOff"));
    m_ipOff->setWordWrap(true);
    Theme::setTextColor(m_ipOff, Theme::action(Core::Action::Throttle));
    m_ipOff->hide();
    ipLayout->addWidget(m_ipOff);
    m_levels = new LevelsEditor({true, false});
    ipLayout->addWidget(m_levels);
    layout->addWidget(ip);

    auto* more = new QGroupBox(tr("More rules: count by another key, or limit one path more tightly"));
    auto* moreLayout = new QVBoxLayout(more);
    m_moreTable = new QTableWidget(0, MoreColumns);
    m_moreTable->setHorizontalHeaderLabels({tr("Rule"), tr("Counted by"), tr("Applies to"), tr("Levels")});
    m_moreTable->horizontalHeader()->setSectionResizeMode(MoreLevels, QHeaderView::Stretch);
    m_moreTable->verticalHeader()->hide();
    m_moreTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_moreTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_moreTable->setSelectionMode(QAbstractItemView::SingleSelection);
    m_moreTable->setMinimumHeight(90);
    m_moreTable->setToolTip(tr("Double-click a rule to edit it"));
    moreLayout->addWidget(m_moreTable);
    auto* moreButtons = new QHBoxLayout;
    auto* addRule = new QPushButton(Theme::icon(QStringLiteral("add")), tr("Add rule…"));
    auto* editRuleButton = new QPushButton(Theme::icon(QStringLiteral("edit")), tr("Edit…"));
    auto* removeRule = new QPushButton(Theme::icon(QStringLiteral("remove")), tr("Remove"));
    moreButtons->addWidget(addRule);
    moreButtons->addWidget(editRuleButton);
    moreButtons->addWidget(removeRule);
    moreButtons->addStretch();
    moreLayout->addLayout(moreButtons);
    layout->addWidget(more);
    connect(addRule, &QPushButton::clicked, this, [this] { editRule(-1); });
    connect(editRuleButton, &QPushButton::clicked, this, [this] { editRule(m_moreTable->currentRow()); });
    connect(m_moreTable, &QTableWidget::cellDoubleClicked, this, [this](int row, int) { editRule(row); });
    connect(removeRule, &QPushButton::clicked, this, [this] {
        const int row = m_moreTable->currentRow();
        if (row < 0 || row >= int(m_moreRules.size()))
            return;
        m_moreRules.erase(m_moreRules.begin() + row);
        showMoreRules();
        markChanged();
    });

    auto* cd = new QGroupBox(tr("Cooldowns: once an action succeeded, the same user may not repeat it for a while"));
    auto* cdLayout = new QVBoxLayout(cd);
    m_cooldowns = new QTableWidget(0, CdColumns);
    m_cooldowns->setHorizontalHeaderLabels({tr("Name"), tr("Method"), tr("Path (glob)"), tr("Seconds"), tr("User header")});
    m_cooldowns->horizontalHeader()->setSectionResizeMode(CdPath, QHeaderView::Stretch);
    m_cooldowns->horizontalHeader()->setSectionResizeMode(CdUserHeader, QHeaderView::Stretch);
    m_cooldowns->verticalHeader()->hide();
    m_cooldowns->setMinimumHeight(90);
    cdLayout->addWidget(m_cooldowns);
    auto* cdButtons = new QHBoxLayout;
    auto* addCd = new QPushButton(Theme::icon(QStringLiteral("add")), tr("Add cooldown"));
    auto* removeCd = new QPushButton(Theme::icon(QStringLiteral("remove")), tr("Remove"));
    cdButtons->addWidget(addCd);
    cdButtons->addWidget(removeCd);
    cdButtons->addStretch();
    cdLayout->addLayout(cdButtons);
    layout->addWidget(cd);

    auto* bots = new QGroupBox(tr("Not counted"));
    auto* botForm = new QFormLayout(bots);
    m_excluded = new QPlainTextEdit;
    m_excluded->setPlaceholderText(tr("one glob per line: *.css, /static/*"));
    m_excluded->setMaximumHeight(90);
    m_safeAgents = new QPlainTextEdit;
    m_safeAgents->setPlaceholderText(tr("one per line: Googlebot (a substring) or *UptimeRobot* (a glob)"));
    m_safeAgents->setMaximumHeight(70);
    m_cookieless = new QCheckBox(tr("Count only requests without cookies (people with a session are not counted)"));
    botForm->addRow(tr("Excluded paths"), m_excluded);
    botForm->addRow(tr("Safe user agents"), m_safeAgents);
    botForm->addRow(QString(), m_cookieless);
    layout->addWidget(bots);

    auto* answers = new QGroupBox(tr("Answers and clients"));
    auto* form = new QFormLayout(answers);
    m_status = new QComboBox;
    m_status->addItem(tr("429 Too Many Requests"), 429);
    m_status->addItem(tr("503 Service Unavailable"), 503);
    m_status->addItem(tr("403 Forbidden"), 403);
    m_dryRun = new QCheckBox(tr("Dry run: decide and log, refuse nothing"));
    m_headers = new QCheckBox(tr("Send RateLimit headers on allowed answers too"));
    m_proxies = new QPlainTextEdit;
    m_proxies->setPlaceholderText(tr("one range per line, e.g. 10.0.0.0/8 — forwarding headers are believed only from these peers"));
    m_proxies->setMaximumHeight(70);
    m_ipv6Prefix = new QSpinBox;
    m_ipv6Prefix->setRange(1, 128);
    m_ipv6Prefix->setPrefix(QStringLiteral("/"));
    m_customerSource = new QComboBox;
    m_customerSource->addItem(tr("customer_id query parameter or X-Customer-Id header"), int(Core::CustomerSource::Either));
    m_customerSource->addItem(tr("customer_id query parameter only"), int(Core::CustomerSource::QueryParameter));
    m_customerSource->addItem(tr("X-Customer-Id header only"), int(Core::CustomerSource::Header));
    form->addRow(tr("Throttle status"), m_status);
    form->addRow(QString(), m_dryRun);
    form->addRow(QString(), m_headers);
    form->addRow(tr("Trusted proxies"), m_proxies);
    form->addRow(tr("IPv6 counting prefix"), m_ipv6Prefix);
    form->addRow(tr("Customer named by"), m_customerSource);
    layout->addWidget(answers);

    auto* esc = new QGroupBox(tr("Escalation (automatic blocklist)"));
    auto* escForm = new QFormLayout(esc);
    m_escalation = new QCheckBox(tr("Ban clients that keep being refused"));
    m_refusals = new QSpinBox;
    m_refusals->setRange(1, 1'000'000);
    m_refusals->setSuffix(tr(" refusals"));
    m_find = seconds(86'400);
    m_ban = seconds(365 * 86'400);
    m_maxBan = seconds(365 * 86'400);
    escForm->addRow(QString(), m_escalation);
    escForm->addRow(tr("After"), m_refusals);
    escForm->addRow(tr("within"), m_find);
    escForm->addRow(tr("ban for"), m_ban);
    escForm->addRow(tr("doubling up to"), m_maxBan);
    layout->addWidget(esc);
    layout->addStretch();

    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(12, 6, 12, 10);
    m_problem = new QLabel;
    m_problem->setWordWrap(true);
    m_apply = new QPushButton(Theme::icon(QStringLiteral("check")), tr("Apply"));
    m_apply->setDefault(true);
    m_revert = new QPushButton(Theme::icon(QStringLiteral("undo")), tr("Revert"));
    bar->addWidget(m_problem, 1);
    bar->addWidget(m_revert);
    bar->addWidget(m_apply);
    outer->addLayout(bar);

    auto changed = [this] { markChanged(); };
    connect(m_levels, &LevelsEditor::changed, this, changed);
    connect(m_cooldowns, &QTableWidget::cellChanged, this, changed);
    for (QPlainTextEdit* e : {m_excluded, m_safeAgents, m_proxies})
        connect(e, &QPlainTextEdit::textChanged, this, changed);
    for (QCheckBox* c : {m_cookieless, m_dryRun, m_headers, m_escalation})
        connect(c, &QCheckBox::toggled, this, changed);
    for (QComboBox* c : {m_status, m_customerSource})
        connect(c, &QComboBox::currentIndexChanged, this, changed);
    for (QSpinBox* s : {m_ipv6Prefix, m_refusals, m_find, m_ban, m_maxBan})
        connect(s, &QSpinBox::valueChanged, this, changed);
    connect(addCd, &QPushButton::clicked, this, [this, changed] {
        appendRow(m_cooldowns, {QStringLiteral("new"), QStringLiteral("POST"), QStringLiteral("/path"), QStringLiteral("30"),
                                QStringLiteral("X-User-Id")});
        changed();
    });
    connect(removeCd, &QPushButton::clicked, this, [this, changed] {
        if (m_cooldowns->currentRow() >= 0) {
            m_cooldowns->removeRow(m_cooldowns->currentRow());
            changed();
        }
    });
    connect(m_apply, &QPushButton::clicked, this, &RulesView::save);
    connect(m_revert, &QPushButton::clicked, this, &RulesView::revert);
    revalidate();
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
    const Core::ThrottleRule* ip = nullptr;
    m_moreRules.clear();
    for (const Core::ThrottleRule& r : c.rules) {
        if (!ip && Core::isPerIpRule(r))
            ip = &r;
        else
            m_moreRules.push_back(r);
    }
    m_levels->setLevels(ip ? ip->levels : std::vector<Core::Level>{});
    showMoreRules();
    m_cooldowns->setRowCount(0);
    for (const Core::Cooldown& cd : c.cooldowns)
        appendRow(m_cooldowns, {qs(cd.name), qs(cd.method), qs(cd.pathGlob), QString::number(cd.durationMs / 1000.0), qs(cd.userHeader)});
    m_excluded->setPlainText(joined(c.bot.excludedPaths));
    m_safeAgents->setPlainText(joined(c.bot.safeUserAgents));
    m_cookieless->setChecked(c.bot.cookielessOnly);
    m_status->setCurrentIndex(m_status->findData(c.settings.throttleStatus));
    m_dryRun->setChecked(c.settings.dryRun);
    m_headers->setChecked(c.settings.rateLimitHeadersOnAllowed);
    QStringList proxies;
    for (const Core::Cidr& p : c.settings.trustedProxies)
        proxies << qs(p.toString());
    m_proxies->setPlainText(proxies.join(QLatin1Char('\n')));
    m_ipv6Prefix->setValue(c.settings.ipv6PrefixBits);
    m_customerSource->setCurrentIndex(m_customerSource->findData(int(c.settings.customerSource)));
    m_escalation->setChecked(c.escalation.enabled);
    m_refusals->setValue(int(c.escalation.refusals));
    m_find->setValue(int(c.escalation.findMs / 1000));
    m_ban->setValue(int(c.escalation.banMs / 1000));
    m_maxBan->setValue(int(c.escalation.maxBanMs / 1000));
    m_loading = false;
    m_dirty = false;
    revalidate();
}

Core::EngineConfig RulesView::edited() const
{
    Core::EngineConfig c = m_base;
    // The per-IP rule keeps its place among the others.
    Core::ThrottleRule ip;
    ip.name = "ip";
    std::size_t ipAt = 0;
    bool hadIp = false;
    for (std::size_t i = 0; i < m_base.rules.size(); ++i) {
        if (Core::isPerIpRule(m_base.rules[i])) {
            ip = m_base.rules[i];
            ipAt = i;
            hadIp = true;
            break;
        }
    }
    ip.levels = m_levels->levels();
    c.rules = m_moreRules;
    // Per-IP limiting turned off (through the API) stays off until the
    // operator gives it a level; the form never turns it off by itself.
    if (hadIp || !ip.levels.empty())
        c.rules.insert(c.rules.begin() + std::ptrdiff_t(std::min(ipAt, c.rules.size())), ip);
    c.cooldowns.clear();
    for (int row = 0; row < m_cooldowns->rowCount(); ++row) {
        auto text = [&](int col) { return m_cooldowns->item(row, col) ? m_cooldowns->item(row, col)->text().trimmed() : QString(); };
        Core::Cooldown cd;
        cd.name = text(CdName).toStdString();
        cd.method = text(CdMethod).toUpper().toStdString();
        cd.pathGlob = text(CdPath).toStdString();
        cd.durationMs = Core::Millis(text(CdSeconds).toDouble() * 1000.0);
        cd.userHeader = text(CdUserHeader).toStdString();
        c.cooldowns.push_back(cd);
    }
    c.bot.excludedPaths = toStd(lines(m_excluded));
    c.bot.safeUserAgents = toStd(lines(m_safeAgents));
    c.bot.cookielessOnly = m_cookieless->isChecked();
    c.settings.throttleStatus = m_status->currentData().toInt();
    c.settings.dryRun = m_dryRun->isChecked();
    c.settings.rateLimitHeadersOnAllowed = m_headers->isChecked();
    c.settings.trustedProxies.clear();
    for (const QString& l : lines(m_proxies))
        if (auto range = Core::Cidr::parse(l.toStdString()))
            c.settings.trustedProxies.push_back(*range);
    c.settings.ipv6PrefixBits = m_ipv6Prefix->value();
    c.settings.customerSource = Core::CustomerSource(m_customerSource->currentData().toInt());
    c.escalation.enabled = m_escalation->isChecked();
    c.escalation.refusals = std::uint32_t(m_refusals->value());
    c.escalation.findMs = Core::Millis(m_find->value()) * 1000;
    c.escalation.banMs = Core::Millis(m_ban->value()) * 1000;
    c.escalation.maxBanMs = Core::Millis(m_maxBan->value()) * 1000;
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

void RulesView::showMoreRules()
{
    const int current = m_moreTable->currentRow();
    m_moreTable->setRowCount(0);
    for (const Core::ThrottleRule& r : m_moreRules)
        appendRow(m_moreTable, {qs(r.name), RuleDialog::describeKey(r), RuleDialog::describeScope(r), TiersModel::describe(r.levels)});
    m_moreTable->resizeColumnsToContents();
    for (int col = 0; col < MoreLevels; ++col)
        m_moreTable->setColumnWidth(col, std::max(m_moreTable->columnWidth(col) + 16, 140));
    m_moreTable->horizontalHeader()->setSectionResizeMode(MoreLevels, QHeaderView::Stretch);
    if (current >= 0 && current < m_moreTable->rowCount())
        m_moreTable->selectRow(current);
}

void RulesView::editRule(int row)
{
    const bool isNew = row < 0 || row >= int(m_moreRules.size());
    QStringList taken;
    const Core::EngineConfig now = edited();
    for (const Core::ThrottleRule& r : now.rules)
        taken << qs(r.name);
    RuleDialog dialog(isNew ? nullptr : &m_moreRules[std::size_t(row)], taken, this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    if (isNew)
        m_moreRules.push_back(dialog.rule());
    else
        m_moreRules[std::size_t(row)] = dialog.rule();
    showMoreRules();
    m_moreTable->selectRow(isNew ? int(m_moreRules.size()) - 1 : row);
    markChanged();
}

void RulesView::revalidate()
{
    const bool ipOff = m_levels->levels().empty();
    m_ipOff->setVisible(ipOff);
    // No levels is what the stored rules say when per-IP limiting was
    // turned off; emptying them here is a problem (LevelsEditor says so).
    m_why = ipOff && !Core::perIpLimiting(m_base.rules) ? QString() : m_levels->problem();
    if (m_why.isEmpty()) {
        for (const QString& l : lines(m_proxies)) {
            std::string why;
            if (!Core::Cidr::parse(l.toStdString(), &why)) {
                m_why = tr("Trusted proxy \"%1\": %2").arg(l, qs(why));
                break;
            }
        }
    }
    if (m_why.isEmpty()) {
        for (int row = 0; row < m_cooldowns->rowCount() && m_why.isEmpty(); ++row) {
            bool ok = false;
            const double secs = m_cooldowns->item(row, CdSeconds) ? m_cooldowns->item(row, CdSeconds)->text().toDouble(&ok) : 0;
            if (!ok || secs <= 0)
                m_why = tr("Cooldown %1: the seconds must be a number above 0.").arg(row + 1);
        }
    }
    if (m_why.isEmpty()) {
        if (auto invalid = Core::validate(edited()))
            m_why = qs(*invalid);
    }
    if (m_why.isEmpty() && m_maxBan->value() < m_ban->value())
        m_why = tr("The longest ban must not be shorter than the first.");
    if (!m_why.isEmpty())
        m_problem->setText(QStringLiteral("<span style='color:%1'>%2</span>").arg(Theme::action(Core::Action::Block).name(), m_why.toHtmlEscaped()));
    else
        m_problem->setText(m_dirty ? tr("Changed: Apply saves it and it is in force for the next request.") : tr("These are the rules in force."));
    m_apply->setEnabled(m_dirty && m_why.isEmpty());
    m_revert->setEnabled(m_dirty);
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

} // namespace Floodgate::Ui
