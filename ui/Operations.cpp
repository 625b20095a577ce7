// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/Operations.h"

#include "ui/Console.h"
#include "core/Engine.h"
#include "ui/Format.h"
#include "wire/ListFile.h"
#include "ui/NoticeBar.h"
#include "core/Tuning.h"

#include <QFile>
#include <QMessageBox>

#include <memory>

namespace Floodgate::Ui {

namespace {

// Counts answers of a batch and reports once every one has come back.
struct Batch {
    int pending = 0;
    int failed = 0;
    bool allGone = true;  // every failure was a 404
    QString firstError;
    // What a removal batch really took away (for Undo).
    std::shared_ptr<std::vector<std::pair<Core::ListKind, Core::ListEntry>>> removed =
        std::make_shared<std::vector<std::pair<Core::ListKind, Core::ListEntry>>>();
};

} // namespace

Operations::Operations(Console& console, NoticeBar& notice, NoticeBar& problem, QWidget* dialogParent)
    : QObject(dialogParent)
    , m_console(console)
    , m_notice(notice)
    , m_problem(problem)
    , m_parent(dialogParent)
{
}

void Operations::addToList(Core::ListKind kind, const std::vector<Core::Cidr>& ranges, Core::Millis ttlMs, const QString& reason)
{
    if (ranges.empty()) {
        m_problem.show(tr("Select a client first."));
        return;
    }
    const Core::Millis now = m_console.services().clock->now();
    std::vector<std::pair<Core::ListKind, Core::ListEntry>> entries;
    for (const Core::Cidr& r : ranges) {
        Core::ListEntry e;
        e.range = r;
        e.reason = reason.toStdString();
        e.createdAt = now;  // the TTL counts from here, exactly
        e.expiresAt = ttlMs > 0 ? now + ttlMs : Core::NeverExpires;
        e.source = Core::ListSource::Operator;
        entries.emplace_back(kind, std::move(e));
    }
    const QString who = ranges.size() == 1 ? rangeText(ranges[0]) : tr("%1 clients").arg(ranges.size());
    const QString what = kind == Core::ListKind::Blocklist ? tr("Blocked %1 %2.") : tr("Safelisted %1 %2.");
    addAll(std::move(entries), what.arg(who, formatDuration(ttlMs, Span::For)), true);
}

void Operations::saveEntry(Core::ListKind kind, Core::ListEntry entry, const QString& doneText)
{
    addAll({{kind, std::move(entry)}}, doneText, true);
}

void Operations::addAll(std::vector<std::pair<Core::ListKind, Core::ListEntry>> entries, const QString& doneText, bool undoable)
{
    // What each range was before, for Undo: an entry it replaced, or nothing.
    const Core::ListSet lists = m_console.services().engine->lists();
    auto before = std::make_shared<std::vector<std::pair<Core::ListKind, std::optional<Core::ListEntry>>>>();
    for (const auto& [kind, e] : entries) {
        const Core::ListEntry* old = lists.find(kind, e.range);
        before->emplace_back(kind, old ? std::optional<Core::ListEntry>(*old) : std::nullopt);
    }
    auto ranges = std::make_shared<std::vector<Core::Cidr>>();
    for (const auto& [k, e] : entries)
        ranges->push_back(e.range);
    auto batch = std::make_shared<Batch>();
    batch->pending = int(entries.size());
    for (auto& [kind, e] : entries) {
        m_console.addEntry(kind, std::move(e), [this, batch, before, ranges, doneText, undoable](const Storage::Outcome& o) {
            if (!o.ok()) {
                ++batch->failed;
                if (batch->firstError.isEmpty())
                    batch->firstError = qs(o.error);
            }
            if (--batch->pending > 0)
                return;
            if (batch->failed) {
                m_problem.show(tr("Not saved: %1").arg(batch->firstError));
                return;
            }
            if (!undoable) {
                m_notice.show(doneText);
                return;
            }
            m_notice.show(doneText, [this, before, ranges] {
                // Put back what was there: the replaced entry, or nothing.
                std::vector<std::pair<Core::ListKind, Core::ListEntry>> restore;
                std::vector<std::pair<Core::ListKind, Core::ListEntry>> added;
                for (std::size_t i = 0; i < before->size(); ++i) {
                    const auto& [kind, old] = (*before)[i];
                    if (old) {
                        restore.emplace_back(kind, *old);
                    } else {
                        Core::ListEntry e;
                        e.range = (*ranges)[i];
                        added.emplace_back(kind, e);
                    }
                }
                if (!added.empty())
                    removeEntries(std::move(added), false);
                if (!restore.empty())
                    addAll(std::move(restore), tr("Restored the previous entries."), false);
            });
        });
    }
}

void Operations::removeFromLists(const std::vector<Core::Cidr>& ranges, std::optional<Core::ListKind> only)
{
    const Core::ListSet lists = m_console.services().engine->lists();
    std::vector<std::pair<Core::ListKind, Core::ListEntry>> removed;
    for (const Core::Cidr& r : ranges)
        for (Core::ListKind kind : {Core::ListKind::Blocklist, Core::ListKind::Safelist})
            if (const Core::ListEntry* e = lists.find(kind, r); e && (!only || *only == kind))
                removed.emplace_back(kind, *e);
    if (removed.empty()) {
        m_problem.show(ranges.size() == 1 ? tr("%1 is on no list.").arg(rangeText(ranges[0])) : tr("None of them is on a list."));
        return;
    }
    removeEntries(std::move(removed), true);
}

void Operations::removeEntries(std::vector<std::pair<Core::ListKind, Core::ListEntry>> entries, bool undoable)
{
    auto batch = std::make_shared<Batch>();
    batch->pending = int(entries.size());
    auto copy = std::make_shared<std::vector<std::pair<Core::ListKind, Core::ListEntry>>>(entries);
    const QString who = entries.size() == 1 ? rangeText(entries[0].second.range) : tr("%1 entries").arg(entries.size());
    for (const auto& [kind, e] : entries) {
        m_console.removeEntry(kind, e.range, [this, batch, copy, who, undoable, kind, e](const Storage::Outcome& o) {
            if (o.ok())
                batch->removed->emplace_back(kind, e);  // only these are put back by Undo
            // 404: gone already (expired, or removed elsewhere) — the goal is
            // met, but the operator is told it was not this click.
            if (!o.ok()) {
                ++batch->failed;
                if (batch->firstError.isEmpty())
                    batch->firstError = qs(o.error);
                batch->allGone = batch->allGone && o.result == Storage::Result::NotFound;
            }
            if (--batch->pending > 0)
                return;
            if (batch->failed && !batch->allGone) {
                m_problem.show(tr("Not removed: %1").arg(batch->firstError));
                return;
            }
            if (batch->failed && batch->failed == int(copy->size())) {
                m_notice.show(tr("%1 was not on the list any more.").arg(who));
                return;
            }
            if (!undoable) {
                m_notice.show(tr("Removed %1 again.").arg(who));
                return;
            }
            const auto removed = batch->removed;
            m_notice.show(tr("Removed %1 from the lists.").arg(who), [this, removed] {
                addAll(*removed, tr("Put %1 back.").arg(removed->size() == 1 ? rangeText(removed->front().second.range) : tr("the entries")), false);
            });
        });
    }
}

void Operations::extend(Core::ListKind kind, const std::vector<Core::ListEntry>& entries, Core::Millis byMs)
{
    std::vector<std::pair<Core::ListKind, Core::ListEntry>> longer;
    const Core::Millis now = m_console.services().clock->now();
    for (const Core::ListEntry& entry : entries) {
        if (entry.expiresAt == Core::NeverExpires)
            continue;  // permanent already
        Core::ListEntry e = entry;  // keeps when and by whom it was created
        e.expiresAt = std::max(entry.expiresAt, now) + byMs;
        if (e.source == Core::ListSource::Automatic)
            e.source = Core::ListSource::Operator;  // the operator now owns it
        longer.emplace_back(kind, std::move(e));
    }
    if (longer.empty()) {
        m_notice.show(entries.size() == 1 ? tr("%1 is permanent already.").arg(rangeText(entries[0].range)) : tr("They are permanent already."));
        return;
    }
    const QString who = longer.size() == 1 ? rangeText(longer[0].second.range) : tr("%1 entries").arg(longer.size());
    addAll(std::move(longer), tr("%1 now end %2 later.").arg(who, formatDuration(byMs, Span::Left)), true);
}

void Operations::importFile(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        m_problem.show(tr("Cannot read %1: %2").arg(path, f.errorString()));
        return;
    }
    const QByteArray content = f.readAll();
    const std::string_view text(content.constData(), std::size_t(content.size()));
    // As `floodgate lists import`: by the extension, else by the content.
    const auto format = Wire::ListFile::formatForPath(path.toStdString()).value_or(Wire::ListFile::formatOfContent(text));
    const auto parsed = Wire::ListFile::parse(text, format, m_console.services().clock->now(), Core::Tuning::defaultListTtlMs);
    if (!parsed.ok()) {
        QString details;
        if (!parsed.fileError.empty())
            details = qs(parsed.fileError);
        for (std::size_t i = 0; i < parsed.rejected.size() && i < 30; ++i)
            details += tr("line %1: %2\n").arg(parsed.rejected[i].line).arg(qs(parsed.rejected[i].why));
        if (parsed.rejected.size() > 30)
            details += tr("... and %1 more").arg(parsed.rejected.size() - 30);
        QMessageBox box(QMessageBox::Warning, tr("Nothing was imported"),
                        parsed.fileError.empty() ? tr("%1 of %2 lines in %3 were rejected; an import is all or nothing.")
                                                       .arg(parsed.rejected.size())
                                                       .arg(parsed.rejected.size() + parsed.rows.size())
                                                       .arg(path)
                                                 : tr("%1 cannot be read as a list file.").arg(path),
                        QMessageBox::Ok, m_parent);
        box.setDetailedText(details);
        box.exec();
        return;
    }
    const auto count = parsed.rows.size();
    m_console.importEntries(parsed.rows, [this, count, path](const Storage::Outcome& o) {
        if (!o.ok()) {
            m_problem.show(tr("Not imported: %1").arg(qs(o.error)));
            return;
        }
        m_notice.show(tr("Imported %1 entries from %2 (%3 replaced existing ones).")
                          .arg(count)
                          .arg(path)
                          .arg(o.value.find("replaced") ? o.value.find("replaced")->asInteger() : 0));
    });
}

void Operations::exportFile(const QString& path)
{
    const auto format = Wire::ListFile::formatForPath(path.toStdString());
    if (!format || *format == Wire::ListFile::Format::Text) {
        m_problem.show(tr("%1: the file name must end in .csv or .json").arg(path));
        return;
    }
    const Core::ListSet lists = m_console.services().engine->lists();
    const Core::Millis now = m_console.services().clock->now();
    std::vector<Core::ListedEntry> all;
    for (Core::ListKind kind : {Core::ListKind::Safelist, Core::ListKind::Blocklist})
        for (Core::ListEntry& e : lists.active(kind, now))
            all.push_back({kind, std::move(e)});
    const std::string text = Wire::ListFile::format(all, *format, now);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text.data(), qint64(text.size())) != qint64(text.size())) {
        m_problem.show(tr("Cannot write %1: %2").arg(path, f.errorString()));
        return;
    }
    m_notice.show(tr("Exported %1 entries to %2.").arg(all.size()).arg(path));
}

} // namespace Floodgate::Ui
