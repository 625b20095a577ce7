// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/SettingFields.h"

#include "ui/Format.h"

#include <QCheckBox>
#include <QLineEdit>
#include <QComboBox>
#include <QSpinBox>

#include <algorithm>
#include <climits>
#include <stdexcept>

namespace Floodgate::Ui {

namespace {

constexpr std::int64_t MS_PER_SECOND = 1000;

std::int64_t clampToInt(std::int64_t v)
{
    return std::clamp<std::int64_t>(v, INT_MIN, INT_MAX);
}

} // namespace

const Core::SettingRow& SettingFields::row(std::string_view path, std::initializer_list<Core::SettingKind> kinds) const
{
    const Core::SettingRow* r = Core::findSetting(path);
    if (!r || std::find(kinds.begin(), kinds.end(), r->kind) == kinds.end())
        throw std::logic_error("no setting " + std::string(path) + " of the kind its widget shows");
    return *r;
}

void SettingFields::add(const Core::SettingRow& row, QWidget* widget, const QString& defaultText)
{
    widget->setToolTip(tr("%1\nDefault: %2.").arg(qs(row.help), defaultText));
    m_fields.push_back({&row, widget, false});
}

void SettingFields::touch(std::size_t field)
{
    m_fields[field].touched = true;
    Q_EMIT changed();
}

QCheckBox* SettingFields::flag(std::string_view path, const QString& text)
{
    const Core::SettingRow& r = row(path, {Core::SettingKind::Flag});
    auto* box = new QCheckBox(text);
    box->setChecked(r.defaultNumber() != 0);
    add(r, box, r.defaultNumber() != 0 ? tr("on") : tr("off"));
    connect(box, &QCheckBox::toggled, this, [this, i = m_fields.size() - 1] { touch(i); });
    return box;
}

QSpinBox* SettingFields::number(std::string_view path)
{
    const Core::SettingRow& r = row(path, {Core::SettingKind::Integer, Core::SettingKind::Duration});
    auto* spin = new QSpinBox;
    spin->setGroupSeparatorShown(true);
    QString defaultText;
    if (r.kind == Core::SettingKind::Duration) {
        // Whole seconds: the wire's longest duration is beyond what a spin box holds.
        spin->setRange(1, INT_MAX);
        spin->setSuffix(tr(" s"));
        spin->setValue(int(clampToInt(r.defaultNumber() / MS_PER_SECOND)));
        defaultText = formatDuration(r.defaultNumber(), Span::Length);
    } else {
        spin->setRange(int(clampToInt(r.min)), int(clampToInt(r.max)));
        spin->setValue(int(clampToInt(r.defaultNumber())));
        defaultText = formatCount(std::uint64_t(r.defaultNumber()));
    }
    add(r, spin, defaultText);
    connect(spin, &QSpinBox::valueChanged, this, [this, i = m_fields.size() - 1] { touch(i); });
    return spin;
}

QComboBox* SettingFields::choice(std::string_view path, const std::vector<std::pair<std::int64_t, QString>>& labels)
{
    const Core::SettingRow& r = row(path, {Core::SettingKind::Choice, Core::SettingKind::Integer});
    auto* combo = new QComboBox;
    QString defaultText;
    for (const auto& [value, label] : labels) {
        if (std::none_of(r.choices.begin(), r.choices.end(), [v = value](const Core::SettingChoice& c) { return c.value == v; }))
            throw std::logic_error("setting " + std::string(path) + " has no choice " + std::to_string(value));
        combo->addItem(label, qlonglong(value));
        if (value == r.defaultNumber())
            defaultText = label;
    }
    combo->setCurrentIndex(combo->findData(qlonglong(r.defaultNumber())));
    add(r, combo, defaultText);
    connect(combo, &QComboBox::currentIndexChanged, this, [this, i = m_fields.size() - 1] { touch(i); });
    return combo;
}

QLineEdit* SettingFields::text(std::string_view path)
{
    const Core::SettingRow& r = row(path, {Core::SettingKind::Text});
    auto* edit = new QLineEdit;
    edit->setMaxLength(int(r.max));
    const Core::EngineConfig defaults = Core::defaultConfig();
    edit->setText(qs(r.access.text(defaults)));
    add(r, edit, qs(r.access.text(defaults)));
    connect(edit, &QLineEdit::textEdited, this, [this, i = m_fields.size() - 1] { touch(i); });
    return edit;
}

std::int64_t SettingFields::value(const Field& f) const
{
    if (auto* box = qobject_cast<QCheckBox*>(f.widget))
        return box->isChecked() ? 1 : 0;
    if (auto* combo = qobject_cast<QComboBox*>(f.widget))
        return combo->currentData().toLongLong();
    const int n = static_cast<QSpinBox*>(f.widget)->value();
    return f.row->kind == Core::SettingKind::Duration ? n * MS_PER_SECOND : n;
}

void SettingFields::load(const Core::EngineConfig& config)
{
    for (Field& f : m_fields) {
        if (auto* edit = qobject_cast<QLineEdit*>(f.widget)) {
            edit->setText(qs(f.row->access.text(config)));
            continue;
        }
        const std::int64_t v = f.row->access.number(config);
        if (auto* box = qobject_cast<QCheckBox*>(f.widget))
            box->setChecked(v != 0);
        else if (auto* combo = qobject_cast<QComboBox*>(f.widget))
            combo->setCurrentIndex(combo->findData(qlonglong(v)));
        else
            static_cast<QSpinBox*>(f.widget)->setValue(
                int(clampToInt(f.row->kind == Core::SettingKind::Duration ? v / MS_PER_SECOND : v)));
    }
    for (Field& f : m_fields)
        f.touched = false;
}

void SettingFields::store(Core::EngineConfig& config) const
{
    for (const Field& f : m_fields) {
        if (!f.touched)
            continue;
        if (auto* edit = qobject_cast<QLineEdit*>(f.widget))
            f.row->access.setText(config, edit->text().trimmed().toStdString());
        else
            f.row->access.setNumber(config, value(f));
    }
}

} // namespace Floodgate::Ui
