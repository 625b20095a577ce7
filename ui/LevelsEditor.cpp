// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/LevelsEditor.h"

#include "wire/Codec.h"
#include "ui/Format.h"
#include "ui/Theme.h"

#include <QComboBox>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <set>

namespace Floodgate::Ui {

namespace {

enum Column { Limit, Per, Unit, Algorithm, Lockout, ColumnCount };

struct UnitChoice {
    const char* label;
    Core::Millis ms;
};
constexpr UnitChoice UNITS[] = {{"seconds", Core::SECOND}, {"minutes", Core::MINUTE}, {"hours", Core::HOUR}, {"days", Core::DAY}};

// The largest unit that divides the period exactly.
std::pair<int, int> splitPeriod(Core::Millis ms)
{
    for (int u = 3; u >= 0; --u)
        if (ms % UNITS[u].ms == 0)
            return {int(ms / UNITS[u].ms), u};
    return {int(std::max<Core::Millis>(1, ms / 1000)), 0};
}

} // namespace

LevelsEditor::LevelsEditor(Options options, QWidget* parent)
    : QWidget(parent)
    , m_options(options)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_table = new QTableWidget(0, options.algorithms ? ColumnCount : Algorithm);
    QStringList headers = {tr("Requests"), tr("per"), tr("unit")};
    if (options.algorithms)
        headers << tr("Algorithm") << tr("Lockout (s)");
    m_table->setHorizontalHeaderLabels(headers);
    m_table->verticalHeader()->hide();
    // Wide enough for every choice to read whole; the table does not stretch
    // a spin box across the window.
    const QFontMetrics fm(font());
    const int pad = 48;
    m_table->setColumnWidth(Limit, fm.horizontalAdvance(QStringLiteral("1,000,000,000")) + pad);
    m_table->setColumnWidth(Per, fm.horizontalAdvance(QStringLiteral("100,000")) + pad);
    m_table->setColumnWidth(Unit, fm.horizontalAdvance(tr("minutes")) + pad);
    if (options.algorithms) {
        m_table->setColumnWidth(Algorithm, fm.horizontalAdvance(tr("sliding window")) + pad);
        m_table->setColumnWidth(Lockout, fm.horizontalAdvance(tr("Lockout (s)")) + pad);
    }
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setMinimumHeight(120);
    layout->addWidget(m_table);
    auto* buttons = new QHBoxLayout;
    m_add = new QPushButton(Theme::icon(QStringLiteral("add")), tr("Add level"));
    m_remove = new QPushButton(Theme::icon(QStringLiteral("remove")), tr("Remove level"));
    buttons->addWidget(m_add);
    buttons->addWidget(m_remove);
    buttons->addStretch();
    layout->addLayout(buttons);
    connect(m_add, &QPushButton::clicked, this, [this] {
        Core::Level l;
        l.limit = 100;
        l.periodMs = Core::HOUR;
        addRow(l);
        Q_EMIT changed();
    });
    connect(m_remove, &QPushButton::clicked, this, [this] {
        const int row = m_table->currentRow();
        if (row >= 0) {
            m_table->removeRow(row);
            if (row < int(m_originals.size()))
                m_originals.erase(m_originals.begin() + row);
            Q_EMIT changed();
        }
    });
}

void LevelsEditor::addRow(const Core::Level& level)
{
    const int row = m_table->rowCount();
    m_table->insertRow(row);
    auto* limit = new QSpinBox;
    limit->setRange(1, 1'000'000'000);
    limit->setGroupSeparatorShown(true);
    limit->setValue(int(std::min<std::uint32_t>(level.limit, 1'000'000'000)));
    auto* per = new QSpinBox;
    per->setRange(1, 100'000);
    auto* unit = new QComboBox;
    for (const UnitChoice& u : UNITS)
        unit->addItem(tr(u.label));
    const auto [count, u] = splitPeriod(level.periodMs);
    per->setValue(count);
    unit->setCurrentIndex(u);
    m_table->setCellWidget(row, Limit, limit);
    m_table->setCellWidget(row, Per, per);
    m_table->setCellWidget(row, Unit, unit);
    connect(limit, &QSpinBox::valueChanged, this, &LevelsEditor::changed);
    connect(per, &QSpinBox::valueChanged, this, &LevelsEditor::changed);
    connect(unit, &QComboBox::currentIndexChanged, this, &LevelsEditor::changed);
    if (m_options.algorithms) {
        auto* alg = new QComboBox;
        alg->addItem(tr("sliding window"), int(Core::Algorithm::SlidingWindow));
        alg->addItem(tr("fixed window"), int(Core::Algorithm::FixedWindow));
        alg->addItem(tr("lockout"), int(Core::Algorithm::Lockout));
        alg->setCurrentIndex(alg->findData(int(level.algorithm)));
        alg->setToolTip(tr("Sliding: counts over the last period in buckets. Fixed: counts per calendar window (resets at each boundary). "
                           "Lockout: once over, refused for the lockout time, then let in again — a steady good bot is never refused."));
        auto* lockout = new QSpinBox;
        lockout->setRange(0, 30 * 86'400);
        lockout->setSpecialValueText(tr("= period"));
        lockout->setValue(int(level.lockoutMs / 1000));
        lockout->setEnabled(level.algorithm == Core::Algorithm::Lockout);
        m_table->setCellWidget(row, Algorithm, alg);
        m_table->setCellWidget(row, Lockout, lockout);
        connect(alg, &QComboBox::currentIndexChanged, this, [this, alg, lockout] {
            lockout->setEnabled(Core::Algorithm(alg->currentData().toInt()) == Core::Algorithm::Lockout);
            Q_EMIT changed();
        });
        connect(lockout, &QSpinBox::valueChanged, this, &LevelsEditor::changed);
    }
    m_originals.push_back(level);
}

void LevelsEditor::setLevels(const std::vector<Core::Level>& levels)
{
    m_table->setRowCount(0);
    m_originals.clear();
    for (const Core::Level& l : levels)
        addRow(l);
    Q_EMIT changed();
}

std::vector<Core::Level> LevelsEditor::levels() const
{
    std::vector<Core::Level> out;
    for (int row = 0; row < m_table->rowCount(); ++row) {
        // Fields the operator did not touch keep their exact stored values
        // (a name, a bucket width, a period or lockout that is not whole seconds).
        const Core::Level original = row < int(m_originals.size()) ? m_originals[std::size_t(row)] : Core::Level{};
        Core::Level l = original;
        const auto* per = static_cast<QSpinBox*>(m_table->cellWidget(row, Per));
        const auto* unit = static_cast<QComboBox*>(m_table->cellWidget(row, Unit));
        const auto shown = splitPeriod(original.periodMs);
        if (original.periodMs <= 0 || per->value() != shown.first || unit->currentIndex() != shown.second) {
            l.periodMs = Core::Millis(per->value()) * UNITS[unit->currentIndex()].ms;
            l.name.clear();   // a name like "pro-1m" would now lie about the period
            l.bucketMs = 0;   // the default width for the new period
        }
        l.limit = std::uint32_t(static_cast<QSpinBox*>(m_table->cellWidget(row, Limit))->value());
        if (m_options.algorithms) {
            l.algorithm = Core::Algorithm(static_cast<QComboBox*>(m_table->cellWidget(row, Algorithm))->currentData().toInt());
            const int lockoutSeconds = static_cast<QSpinBox*>(m_table->cellWidget(row, Lockout))->value();
            if (l.algorithm != Core::Algorithm::Lockout)
                l.lockoutMs = 0;
            else if (lockoutSeconds != int(original.lockoutMs / 1000) || original.algorithm != Core::Algorithm::Lockout)
                l.lockoutMs = Core::Millis(lockoutSeconds) * 1000;
            if (l.algorithm != Core::Algorithm::SlidingWindow)
                l.bucketMs = 0;
        }
        out.push_back(l);
    }
    return out;
}

QString LevelsEditor::problem() const
{
    const auto all = levels();
    if (all.empty() && !m_options.allowEmpty)
        return tr("Give at least one level.");
    std::set<Core::Millis> periods;
    for (const Core::Level& l : all)
        if (!periods.insert(l.periodMs).second)
            return tr("Two levels have the same period (%1): one level per period.").arg(formatDuration(l.periodMs, Span::Length));
    return {};
}

} // namespace Floodgate::Ui
