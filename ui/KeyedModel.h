// SPDX-License-Identifier: GPL-3.0-or-later
// Table models whose rows are merged from snapshots by key, so a selected
// or sorted row stays where the operator left it while the numbers move
// (qBittorrent's TransferListModel): rows that are still there are updated
// in place with one dataChanged for the whole table, new ones are appended,
// gone ones removed. AppendModel keeps a bounded stream (events, audit),
// newest first.
#pragma once

#include <QAbstractTableModel>

#include <algorithm>
#include <deque>
#include <unordered_map>
#include <vector>

namespace Floodgate::Ui {

template <class Row>
class KeyedModel : public QAbstractTableModel {
public:
    using QAbstractTableModel::QAbstractTableModel;

    int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : int(m_rows.size()); }
    const Row* rowAt(int r) const { return r >= 0 && r < int(m_rows.size()) ? &m_rows[std::size_t(r)] : nullptr; }
    int rowOf(const QString& key) const
    {
        auto it = m_index.find(key);
        return it == m_index.end() ? -1 : it->second;
    }
    const std::vector<Row>& rows() const { return m_rows; }

protected:
    virtual QString keyOf(const Row& row) const = 0;

    void merge(std::vector<Row> next)
    {
        std::unordered_map<QString, std::size_t> incoming;
        incoming.reserve(next.size());
        for (std::size_t i = 0; i < next.size(); ++i)
            incoming.emplace(keyOf(next[i]), i);
        // 1. Remove rows that are gone, highest first, in contiguous runs.
        for (int r = int(m_rows.size()) - 1; r >= 0;) {
            if (incoming.count(keyOf(m_rows[std::size_t(r)]))) {
                --r;
                continue;
            }
            int first = r;
            while (first > 0 && !incoming.count(keyOf(m_rows[std::size_t(first - 1)])))
                --first;
            beginRemoveRows({}, first, r);
            m_rows.erase(m_rows.begin() + first, m_rows.begin() + r + 1);
            endRemoveRows();
            r = first - 1;
        }
        reindex();
        // 2. Update the rows that stay, collect the new ones.
        std::vector<Row> added;
        for (std::size_t i = 0; i < next.size(); ++i) {
            auto it = m_index.find(keyOf(next[i]));
            if (it != m_index.end())
                m_rows[std::size_t(it->second)] = std::move(next[i]);
            else
                added.push_back(std::move(next[i]));
        }
        if (!m_rows.empty())
            Q_EMIT dataChanged(index(0, 0), index(int(m_rows.size()) - 1, columnCount() - 1));
        // 3. Append the new ones.
        if (!added.empty()) {
            beginInsertRows({}, int(m_rows.size()), int(m_rows.size() + added.size()) - 1);
            for (Row& r : added)
                m_rows.push_back(std::move(r));
            endInsertRows();
            reindex();
        }
    }

private:
    void reindex()
    {
        m_index.clear();
        for (std::size_t i = 0; i < m_rows.size(); ++i)
            m_index[keyOf(m_rows[i])] = int(i);
    }

    std::vector<Row> m_rows;
    std::unordered_map<QString, int> m_index;
};

template <class Row>
class AppendModel : public QAbstractTableModel {
public:
    // Newest first: a batch goes in at the top and the oldest rows leave at
    // the bottom, so a view shows the stream newest first without a sorting
    // proxy re-sorting thousands of rows on every refresh.
    explicit AppendModel(std::size_t capacity, QObject* parent = nullptr) : QAbstractTableModel(parent), m_capacity(capacity) {}

    int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : int(m_rows.size()); }
    // Row 0 is the newest.
    const Row* rowAt(int r) const { return r >= 0 && r < int(m_rows.size()) ? &m_rows[std::size_t(r)] : nullptr; }

    // Adds a batch given oldest first (one insert per refresh, as Wireshark's
    // packet list does), dropping the oldest beyond the capacity.
    void append(std::vector<Row> batch)
    {
        if (batch.empty())
            return;
        if (batch.size() > m_capacity)
            batch.erase(batch.begin(), batch.end() - std::ptrdiff_t(m_capacity));
        const std::size_t over = m_rows.size() + batch.size() > m_capacity ? m_rows.size() + batch.size() - m_capacity : 0;
        if (over > 0) {
            beginRemoveRows({}, int(m_rows.size() - over), int(m_rows.size()) - 1);
            m_rows.erase(m_rows.end() - std::ptrdiff_t(over), m_rows.end());
            endRemoveRows();
        }
        beginInsertRows({}, 0, int(batch.size()) - 1);
        for (Row& r : batch)
            m_rows.push_front(std::move(r));
        endInsertRows();
    }

private:
    std::size_t m_capacity;
    std::deque<Row> m_rows;
};

} // namespace Floodgate::Ui
