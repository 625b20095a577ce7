// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/StreamModels.h"

#include "http/Explain.h"
#include "wire/Codec.h"
#include "ui/Format.h"
#include "wire/Json.h"
#include "ui/Theme.h"
#include "core/Tuning.h"

namespace Floodgate::Ui {

EventsModel::EventsModel(QObject* parent)
    : AppendModel<Http::Event>(Core::Tuning::maxEventsKept, parent)
{
}

void EventsModel::apply(const ConsoleSnapshot& s)
{
    m_now = s.now;
    append(s.events);
}

int EventsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant EventsModel::data(const QModelIndex& index, int role) const
{
    const Http::Event* e = rowAt(index.row());
    if (!e)
        return {};
    const Http::LogRecord& r = e->record;
    switch (role) {
    case ClientRole: return qs(r.ip.toString());
    case WhyRole: return qs(Http::explain(r));
    case SortRole:
        switch (index.column()) {
        case Time: return qulonglong(e->id);
        case Count: return r.attempts;
        case RetryAfter: return qint64(r.retryAfterMs);
        default: return data(index, Qt::DisplayRole);
        }
    case Qt::DisplayRole:
        switch (index.column()) {
        case Time: return formatClock(r.time, m_now);
        case Action: return Theme::actionLabel(r.action);
        case Rule: return qs(r.rule.view());
        case Client: return qs(r.ip.toString());
        case Request:
            return QString::fromUtf8(r.method) + QLatin1Char(' ') + QString::fromUtf8(r.path)
                + (r.query[0] ? QLatin1Char('?') + QString::fromUtf8(r.query) : QString());
        case Count: return r.limit ? QStringLiteral("%1 / %2").arg(r.attempts).arg(r.limit) : QString();
        case RetryAfter: return r.retryAfterMs > 0 ? formatDuration(r.retryAfterMs, Span::Left) : QString();
        case Customer: return QString::fromUtf8(r.customer);
        }
        return {};
    case Qt::ToolTipRole: return qs(Http::explain(r));
    case Qt::ForegroundRole:
        if (index.column() == Action)
            return Theme::action(r.action);
        return {};
    }
    return {};
}

QVariant EventsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Time: return tr("Time");
    case Action: return tr("Action");
    case Rule: return tr("Rule");
    case Client: return tr("Client");
    case Request: return tr("Request");
    case Count: return tr("Count / limit");
    case RetryAfter: return tr("Retry after");
    case Customer: return tr("Customer");
    }
    return {};
}

AuditModel::AuditModel(QObject* parent)
    : AppendModel<Storage::AuditRow>(10'000, parent)
{
}

void AuditModel::apply(const ConsoleSnapshot& s)
{
    m_now = s.now;
    append(s.audit);
}

int AuditModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant AuditModel::data(const QModelIndex& index, int role) const
{
    const Storage::AuditRow* a = rowAt(index.row());
    if (!a)
        return {};
    switch (role) {
    case SortRole: return index.column() == Time ? QVariant(qlonglong(a->id)) : data(index, Qt::DisplayRole);
    case DetailRole: {
        QString text = tr("%1 by %2 at %3").arg(qs(a->action), qs(a->actor), qs(Wire::Codec::formatTime(a->at, true)));
        if (!a->before.empty())
            text += tr("\n\nBefore: %1").arg(qs(a->before));
        if (!a->after.empty())
            text += tr("\n\nAfter: %1").arg(qs(a->after));
        return text;
    }
    case Qt::DisplayRole:
        switch (index.column()) {
        case Time: return formatClock(a->at, m_now);
        case Actor: return qs(a->actor);
        case Action: return qs(a->action);
        case Subject: return qs(a->subject);
        }
        return {};
    }
    return {};
}

QVariant AuditModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Time: return tr("Time");
    case Actor: return tr("Who");
    case Action: return tr("What");
    case Subject: return tr("Subject");
    }
    return {};
}

} // namespace Floodgate::Ui
