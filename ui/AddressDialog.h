// SPDX-License-Identifier: GPL-3.0-or-later
// Add or edit a safelist or blocklist entry. OK stays disabled, with the
// reason shown, while the address does not parse; IPv6 is shown as it will
// be stored (RFC 5952, host bits cleared) so duplicates cannot slip in.
// The TTL defaults to 7 days with quick choices.
#pragma once

#include <QDialog>

#ifndef Q_MOC_RUN
#include "core/AddressList.h"
#endif

class QButtonGroup;
class QComboBox;
class QDateTimeEdit;
class QDialogButtonBox;
class QLabel;
class QLineEdit;

namespace Floodgate::Ui {

class AddressDialog : public QDialog {
    Q_OBJECT

public:
    struct Result {
        Core::ListKind kind = Core::ListKind::Blocklist;
        Core::Cidr range;
        QString reason;
        Core::Millis expiresAt = Core::NeverExpires;
        Core::Millis ttlMs = 0;  // a quick choice: the end is now + this when saved (0: expiresAt as is)

        // The end, saved at `now`.
        Core::Millis expiresAtFrom(Core::Millis now) const { return ttlMs > 0 ? now + ttlMs : expiresAt; }
        // How long it lasts from `now` (0: permanently), for formatDuration(…, Span::For).
        Core::Millis ttlFrom(Core::Millis now) const { return ttlMs > 0 ? ttlMs : expiresAt == Core::NeverExpires ? 0 : expiresAt - now; }
        // A new entry, created at `now`; `fallbackReason` when none was given.
        Core::ListEntry newEntry(Core::Millis now, const QString& fallbackReason = {}) const
        {
            Core::ListEntry e;
            e.range = range;
            e.reason = (reason.isEmpty() ? fallbackReason : reason).toStdString();
            e.createdAt = now;
            e.expiresAt = expiresAtFrom(now);
            return e;
        }
    };

    // `now` resolves the TTL choices; `existing` edits an entry (its address is fixed).
    AddressDialog(Core::ListKind kind, Core::Millis now, QWidget* parent = nullptr, const Core::ListEntry* existing = nullptr);

    void setAddress(const QString& text);
    // 0: 1 h, 1: 24 h, 2: 7 days, 3: 30 days, 4: permanent, 5: until a date
    void setChoice(int choice);
    Result result() const;
    bool acceptable() const;
    QString problem() const;  // why OK is disabled ("" when it is not)

    static constexpr int DefaultChoice = 2;  // 7 days

private:
    void revalidate();

    Core::Millis m_now;
    QComboBox* m_list = nullptr;
    QLineEdit* m_address = nullptr;
    QLabel* m_normalized = nullptr;
    QLineEdit* m_reason = nullptr;
    QButtonGroup* m_choices = nullptr;
    QDateTimeEdit* m_until = nullptr;
    QLabel* m_problem = nullptr;
    QDialogButtonBox* m_buttons = nullptr;
    std::optional<Core::Cidr> m_range;
    QString m_why;
};

} // namespace Floodgate::Ui
