// SPDX-License-Identifier: GPL-3.0-or-later
// Where things are: the database, the limiter log, the listener, the admin
// API and its bearer token (required when the API is bound beyond loopback).
#pragma once

#include <QDialog>

namespace Floodgate::Ui {

class Console;

class SettingsDialog : public QDialog {
    Q_OBJECT

public:
    SettingsDialog(const Console& console, QWidget* parent = nullptr);
};

} // namespace Floodgate::Ui
