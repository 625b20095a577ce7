// SPDX-License-Identifier: GPL-3.0-or-later
// The console's widgets for rows of the setting table (SettingTable.h): the
// row gives a widget its range, its tooltip (the help text and the default)
// and the member it shows and writes; the section gives it a label and a
// place in its form.
#pragma once

#include <QObject>

#ifndef Q_MOC_RUN
#include "core/SettingTable.h"
#endif

#include <string_view>
#include <utility>
#include <vector>

class QCheckBox;
class QComboBox;
class QLineEdit;
class QSpinBox;
class QWidget;

namespace Floodgate::Ui {

class SettingFields : public QObject {
    Q_OBJECT

public:
    using QObject::QObject;

    // `path` names a row ("settings.ipv6_prefix"); none is a programming
    // error, reported at once.
    QCheckBox* flag(std::string_view path, const QString& text);  // a Flag
    QSpinBox* number(std::string_view path);                     // an Integer; a Duration in seconds
    // A Choice, or an Integer limited to a few values: each value the
    // operator may pick, with its label, in the order shown.
    QComboBox* choice(std::string_view path, const std::vector<std::pair<std::int64_t, QString>>& labels);
    QLineEdit* text(std::string_view path);  // a Text

    void load(const Core::EngineConfig& config);
    // Writes the value of each widget the operator changed since load().
    // One not touched keeps the value in `config` exactly, even one its
    // widget cannot show (1.5 s in a field of whole seconds, a number
    // beyond its range).
    void store(Core::EngineConfig& config) const;

Q_SIGNALS:
    void changed();

private:
    struct Field {
        const Core::SettingRow* row = nullptr;
        QWidget* widget = nullptr;
        bool touched = false;  // changed by the operator since load()
    };
    const Core::SettingRow& row(std::string_view path, std::initializer_list<Core::SettingKind> kinds) const;
    void add(const Core::SettingRow& row, QWidget* widget, const QString& defaultText);
    void touch(std::size_t field);
    std::int64_t value(const Field& field) const;

    std::vector<Field> m_fields;
};

} // namespace Floodgate::Ui
