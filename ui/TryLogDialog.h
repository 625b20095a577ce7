// SPDX-License-Identifier: GPL-3.0-or-later
// "Try on a log…" in the Rules view: replays access logs through the rules
// in force and through the edited (not yet applied) rules side by side, with
// the replay library (engine/replay, the code behind `floodgate replay`), on
// a thread of its own so the window stays responsive; a progress bar and a
// Cancel that stops it. Then one sentence with both totals, the refusals by
// rule, and every client whose outcome differs, with why.
#pragma once

#include <QDialog>

#ifndef Q_MOC_RUN
#include "replay/Replay.h"
#endif

#include <atomic>
#include <memory>

class QLabel;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QThread;

namespace Floodgate::Ui {

class TryLogDialog : public QDialog {
    Q_OBJECT

public:
    // Column of the clients table.
    enum Column { Client, Outcome, Requests, RefusedInForce, RefusedEdited, Why, FirstRefusal, Crawler, UserAgent, ColumnCount };

    // `inForce` and `edited`: the rules and lists each side replays through
    // (their names are the dialog's own).
    TryLogDialog(Replay::Configuration inForce, Replay::Configuration edited, QWidget* parent = nullptr);
    // Cancels a replay under way and waits for its thread.
    ~TryLogDialog() override;

    // Replays `files` (read in this order), cancelling one under way first.
    void setFiles(const QStringList& files);
    QStringList files() const { return m_files; }
    bool running() const { return m_thread != nullptr; }
    // The last replay that ran to its end or was cancelled (null before).
    const Replay::Result* result() const { return m_result.get(); }

    QLabel* summaryLabel() const { return m_summary; }
    QLabel* detailLabel() const { return m_detail; }
    QLabel* problemLabel() const { return m_problem; }
    QProgressBar* progressBar() const { return m_progress; }
    QPushButton* cancelButton() const { return m_cancel; }
    QTableWidget* rulesTable() const { return m_rules; }
    QTableWidget* clientsTable() const { return m_clients; }

public Q_SLOTS:
    void chooseFiles();
    // Stops the replay under way (it stops within one progress step).
    void cancel();

Q_SIGNALS:
    // A replay ended: read to its end, cancelled, or failed.
    void replayEnded();

protected:
    void closeEvent(QCloseEvent* event) override;
    void reject() override;

private:
    void start();
    void stop();  // cancel and join
    void showProgress(const Replay::Progress& p);
    void showResult();
    void clearResult();

    Replay::Configuration m_inForce;
    Replay::Configuration m_edited;
    QStringList m_files;
    QThread* m_thread = nullptr;
    std::atomic<bool> m_cancelRequested{false};
    std::uint64_t m_generation = 0;  // of the replay started last; a stopped one's posts are dropped
    std::unique_ptr<Replay::Result> m_result;

    QLabel* m_filesLabel = nullptr;
    QPushButton* m_choose = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_progressText = nullptr;
    QPushButton* m_cancel = nullptr;
    QLabel* m_summary = nullptr;
    QLabel* m_detail = nullptr;
    QLabel* m_problem = nullptr;
    QLabel* m_rulesCaption = nullptr;
    QTableWidget* m_rules = nullptr;
    QLabel* m_clientsCaption = nullptr;
    QTableWidget* m_clients = nullptr;
    QLabel* m_footnote = nullptr;
};

} // namespace Floodgate::Ui
