// SPDX-License-Identifier: GPL-3.0-or-later
// Customer tiers (Free 100/h; Pro 100/min + 5K/h; Enterprise 200/min +
// 10K/h) and the customers on them, with each customer's current use.
// Edits are validated, saved, and apply to the next request.
#pragma once

#include <QWidget>

#ifndef Q_MOC_RUN
#include "ui/ConsoleSnapshot.h"
#include "storage/Store.h"
#endif

class QTableView;

namespace Floodgate::Ui {

class Console;
class CustomersModel;
class NoticeBar;
class TiersModel;

class TiersView : public QWidget {
    Q_OBJECT

public:
    TiersView(Console& console, NoticeBar& notice, QWidget* parent = nullptr);
    void apply(const ConsoleSnapshot& snapshot);
    TiersModel* tiers() const { return m_tiers; }
    CustomersModel* customers() const { return m_customers; }
    QTableView* tiersTable() const { return m_tierTable; }

public Q_SLOTS:
    void addTier();
    void editTier();
    void deleteTier();
    void addCustomer();
    void editCustomer();
    void deleteCustomer();
    // A new API key for the selected customer (its other keys revoked, or kept a while), shown once.
    void newKey();
    void revokeKey();
    // The dialog that shows a key made a moment ago, this once (objectName "newKeyDialog").
    void showNewKey(const QString& customer, const QString& secret);

private:
    void saved(const Storage::Outcome& o, const QString& text);

    Console& m_console;
    NoticeBar& m_notice;
    TiersModel* m_tiers = nullptr;
    CustomersModel* m_customers = nullptr;
    QTableView* m_tierTable = nullptr;
    QTableView* m_customerTable = nullptr;
};

} // namespace Floodgate::Ui
