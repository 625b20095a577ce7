// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/AnswersEditor.h"

#include <QLineEdit>

#include "ui/Format.h"
#include "ui/SettingFields.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QPlainTextEdit>
#include <QSpinBox>

namespace Floodgate::Ui {

AnswersEditor::AnswersEditor(QWidget* parent)
    : RulesSection(parent)
    , m_fields(new SettingFields(this))
{
    auto* form = new QFormLayout(addBox(tr("Answers and clients")));
    form->addRow(tr("Throttle status"), m_fields->choice("settings.throttle_status", {{429, tr("429 Too Many Requests")},
                                                                                      {503, tr("503 Service Unavailable")},
                                                                                      {403, tr("403 Forbidden")}}));
    form->addRow(QString(), m_fields->flag("settings.dry_run", tr("Dry run: decide and log, refuse nothing")));
    form->addRow(QString(), m_fields->flag("settings.rate_limit_headers", tr("Send RateLimit headers on allowed answers too")));
    m_proxies = new QPlainTextEdit;
    m_proxies->setPlaceholderText(tr("one range per line, e.g. 10.0.0.0/8 — forwarding headers are believed only from these peers"));
    m_proxies->setMaximumHeight(70);
    form->addRow(tr("Trusted proxies"), m_proxies);
    QSpinBox* ipv6Prefix = m_fields->number("settings.ipv6_prefix");
    ipv6Prefix->setPrefix(QStringLiteral("/"));
    form->addRow(tr("IPv6 counting prefix"), ipv6Prefix);
    using Core::CustomerAuth;
    form->addRow(tr("Customers prove who they are by"),
                 m_fields->choice("settings.customer_auth",
                                  {{std::int64_t(CustomerAuth::ApiKey), tr("their API key")},
                                   {std::int64_t(CustomerAuth::TrustedHeader), tr("a trusted proxy's customer header")},
                                   {std::int64_t(CustomerAuth::ApiKeyOrTrustedHeader), tr("either")}}));
    form->addRow(tr("API key header"), m_fields->text("settings.customer_key_header"));
    form->addRow(tr("Customer header (trusted proxies only)"), m_fields->text("settings.customer_header"));

    connect(m_proxies, &QPlainTextEdit::textChanged, this, &RulesSection::changed);
    connect(m_fields, &SettingFields::changed, this, &RulesSection::changed);
}

void AnswersEditor::load(const Core::EngineConfig& c)
{
    QStringList proxies;
    for (const Core::Cidr& p : c.settings.trustedProxies)
        proxies << qs(p.toString());
    m_proxies->setPlainText(proxies.join(QLatin1Char('\n')));
    m_fields->load(c);
}

void AnswersEditor::store(Core::EngineConfig& c) const
{
    c.settings.trustedProxies.clear();
    for (const QString& l : nonEmptyLines(m_proxies))
        if (auto range = Core::Cidr::parse(l.toStdString()))
            c.settings.trustedProxies.push_back(*range);
    m_fields->store(c);
}

QString AnswersEditor::problem(const Core::EngineConfig&) const
{
    for (const QString& l : nonEmptyLines(m_proxies)) {
        std::string why;
        if (!Core::Cidr::parse(l.toStdString(), &why))
            return tr("Trusted proxy \"%1\": %2").arg(l, qs(why));
    }
    return {};
}

} // namespace Floodgate::Ui
