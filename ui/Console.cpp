// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/Console.h"

#include "ui/SnapshotWorker.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>

#include <cstdlib>

namespace Floodgate::Ui {

Console::Console(ConsoleServices services, QObject* parent)
    : QObject(parent)
    , m_services(std::move(services))
{
    qRegisterMetaType<SnapshotPtr>();
    m_worker = new SnapshotWorker(m_services);
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    connect(m_worker, &SnapshotWorker::ready, this, &Console::deliver, Qt::QueuedConnection);
    m_thread.setObjectName(QStringLiteral("console snapshots"));
}

Console::~Console()
{
    if (m_thread.isRunning()) {
        QMetaObject::invokeMethod(m_worker, &SnapshotWorker::stop, Qt::BlockingQueuedConnection);
        m_thread.quit();
        m_thread.wait();
    } else {
        delete m_worker;
    }
}

void Console::startUpdates()
{
    if (m_thread.isRunning())
        return;
    m_thread.start();
    QMetaObject::invokeMethod(m_worker, &SnapshotWorker::start, Qt::QueuedConnection);
}

void Console::refreshNow()
{
    if (!m_thread.isRunning()) {
        deliver(m_worker->take());
        return;
    }
    // A snapshot carries what is new since the one before it, so they must
    // arrive in order: the worker takes this one too, and everything it has
    // queued for us is delivered now, oldest first.
    QMetaObject::invokeMethod(m_worker, &SnapshotWorker::takeNow, Qt::BlockingQueuedConnection);
    QCoreApplication::sendPostedEvents(this, QEvent::MetaCall);
}

void Console::follow(const QString& address)
{
    m_worker->follow(address.toStdString());
}

void Console::deliver(const SnapshotPtr& s)
{
    m_latest = s;
    Q_EMIT snapshot(s);
}

QString Console::actor() const
{
    const char* user = std::getenv("USER");
    return QStringLiteral("console:") + QString::fromLocal8Bit(user && *user ? user : "operator");
}

Storage::Store::Done Console::onGuiThread(Done done)
{
    // The store calls back on its writer thread after COMMIT; the views
    // want it on theirs. If the window is gone by then, nobody is told.
    // The answer is posted to the application object, which outlives the
    // store's thread; whether the console still exists is checked there, on
    // the GUI thread, never on the writer's. The views that ask are the
    // window's children and go with it, after the event loop has ended.
    QPointer<Console> self(this);
    return [self, done = std::move(done)](const Storage::Outcome& o) {
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, done, o] {
                if (!self)
                    return;
                if (o.storageFailed())
                    Q_EMIT self->problem(tr("Not saved: %1").arg(QString::fromStdString(o.error)));
                if (done)
                    done(o);
            },
            Qt::QueuedConnection);
    };
}

void Console::addEntry(Core::ListKind kind, Core::ListEntry entry, Done done)
{
    m_services.store->addEntry(kind, std::move(entry), Storage::Actor{actor().toStdString()}, onGuiThread(std::move(done)));
}

void Console::removeEntry(Core::ListKind kind, Core::Cidr range, Done done)
{
    m_services.store->removeEntry(kind, range, Storage::Actor{actor().toStdString()}, onGuiThread(std::move(done)));
}

void Console::putTier(Core::Tier tier, Done done)
{
    m_services.store->putTier(std::move(tier), Storage::Actor{actor().toStdString()}, onGuiThread(std::move(done)));
}

void Console::deleteTier(QString name, Done done)
{
    m_services.store->deleteTier(name.toStdString(), Storage::Actor{actor().toStdString()}, onGuiThread(std::move(done)));
}

void Console::putCustomer(Core::Customer customer, Done done, Storage::Store::Keys keys)
{
    m_services.store->putCustomer(std::move(customer), Storage::Actor{actor().toStdString()}, onGuiThread(std::move(done)), keys);
}

void Console::addCustomerKey(QString id, Core::CustomerKey key, Core::Millis keepOthersMs, Done done)
{
    m_services.store->addCustomerKey(id.toStdString(), std::move(key), keepOthersMs, Storage::Actor{actor().toStdString()}, onGuiThread(std::move(done)));
}

void Console::revokeCustomerKey(QString id, QString keyId, Done done)
{
    m_services.store->revokeCustomerKey(id.toStdString(), keyId.toStdString(), Storage::Actor{actor().toStdString()}, onGuiThread(std::move(done)));
}

void Console::deleteCustomer(QString id, Done done)
{
    m_services.store->deleteCustomer(id.toStdString(), Storage::Actor{actor().toStdString()}, onGuiThread(std::move(done)));
}

void Console::updateRules(std::function<std::optional<std::string>(Core::EngineConfig&)> change, Done done)
{
    m_services.store->updateRules(std::move(change), Storage::Actor{actor().toStdString()}, onGuiThread(std::move(done)));
}

void Console::importEntries(std::vector<Core::ListedEntry> rows, Done done)
{
    m_services.store->importEntries(std::move(rows), Storage::Actor{actor().toStdString()}, onGuiThread(std::move(done)));
}

} // namespace Floodgate::Ui
