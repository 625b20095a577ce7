// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/RuleDialog.h"

#include "ui/DialogParts.h"
#include "ui/Format.h"
#include "ui/LevelsEditor.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace Floodgate::Ui {

namespace {

bool isHeaderName(const QString& name)
{
    return Core::isHeaderName(name.toStdString());
}

} // namespace

RuleDialog::RuleDialog(const Core::ThrottleRule* existing, QStringList taken, QWidget* parent)
    : QDialog(parent)
    , m_taken(std::move(taken))
{
    setWindowTitle(existing ? tr("Edit rule %1").arg(qs(existing->name)) : tr("New rule"));
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    m_name = new QLineEdit;
    m_name->setMaxLength(40);
    m_name->setPlaceholderText(tr("e.g. login or api-key"));
    m_countedBy = new QComboBox;
    m_countedBy->addItem(tr("address and user agent (one count per browser behind a shared address)"),
                         int(Core::Discriminator::AddressAndUserAgent));
    m_countedBy->addItem(tr("a request header's value (an API key, a session id)"), int(Core::Discriminator::Header));
    m_countedBy->addItem(tr("client address"), int(Core::Discriminator::ClientAddress));
    m_header = new QLineEdit;
    m_header->setPlaceholderText(QStringLiteral("X-Api-Key"));
    m_method = new QComboBox;
    m_method->setEditable(true);
    m_method->addItem(tr("any method"), QString());
    for (const char* m : {"GET", "POST", "PUT", "PATCH", "DELETE"})
        m_method->addItem(QString::fromLatin1(m), QString::fromLatin1(m));
    m_path = new QLineEdit;
    m_path->setPlaceholderText(tr("any path; or a glob such as /login or /api/*"));
    form->addRow(tr("Name"), m_name);
    form->addRow(tr("Counted by"), m_countedBy);
    form->addRow(tr("Header"), m_header);
    form->addRow(tr("Method"), m_method);
    form->addRow(tr("Path"), m_path);
    layout->addLayout(form);
    auto* explain = new QLabel(tr("Applies to anonymous clients (customers follow their tier) next to the per-IP levels: a request "
                                  "passes while every level of every rule that applies has room. A request without the header "
                                  "is not counted by a header rule."));
    explain->setWordWrap(true);
    layout->addWidget(explain);
    m_levels = new LevelsEditor({true, false});
    layout->addWidget(m_levels);
    m_problem = addProblemLabel(layout);
    m_buttons = addOkCancel(this, layout);

    if (existing) {
        m_original = *existing;
        m_name->setText(qs(existing->name));
        m_taken.removeAll(qs(existing->name));
        m_countedBy->setCurrentIndex(m_countedBy->findData(int(existing->discriminator)));
        m_header->setText(qs(existing->header));
        const int method = m_method->findData(qs(existing->method));
        if (method >= 0)
            m_method->setCurrentIndex(method);
        else
            m_method->setEditText(qs(existing->method));
        m_path->setText(qs(existing->pathGlob));
        m_levels->setLevels(existing->levels);
    } else {
        m_countedBy->setCurrentIndex(m_countedBy->findData(int(Core::Discriminator::Header)));
        Core::Level l;
        l.limit = 1000;
        l.periodMs = Core::HOUR;
        m_levels->setLevels({l});
    }
    resize(760, sizeHint().height());

    for (QLineEdit* e : {m_name, m_header, m_path})
        connect(e, &QLineEdit::textChanged, this, &RuleDialog::revalidate);
    connect(m_countedBy, &QComboBox::currentIndexChanged, this, &RuleDialog::revalidate);
    connect(m_method, &QComboBox::currentTextChanged, this, &RuleDialog::revalidate);
    connect(m_levels, &LevelsEditor::changed, this, &RuleDialog::revalidate);
    revalidate();
}

Core::ThrottleRule RuleDialog::rule() const
{
    Core::ThrottleRule r = m_original;
    r.name = m_name->text().trimmed().toStdString();
    r.discriminator = Core::Discriminator(m_countedBy->currentData().toInt());
    r.header = r.discriminator == Core::Discriminator::Header ? m_header->text().trimmed().toStdString() : std::string();
    // The edit text is what counts: "any method" or a typed method.
    const QString method = m_method->currentText().trimmed();
    const int choice = m_method->findText(method);
    r.method = (choice >= 0 ? m_method->itemData(choice).toString() : method.toUpper()).toStdString();
    r.pathGlob = m_path->text().trimmed().toStdString();
    r.levels = m_levels->levels();
    return r;
}

void RuleDialog::revalidate()
{
    const Core::ThrottleRule r = rule();
    const bool byHeader = r.discriminator == Core::Discriminator::Header;
    m_header->setEnabled(byHeader);
    m_why = checkName(m_name->text().trimmed(), 40, m_taken, tr("rule"));
    if (m_why.isEmpty() && byHeader && !isHeaderName(m_header->text().trimmed()))
        m_why = m_header->text().trimmed().isEmpty() ? tr("Name the header to count by, e.g. X-Api-Key.")
                                                      : tr("\"%1\" is not a header name (letters, digits and - only).").arg(m_header->text().trimmed());
    if (m_why.isEmpty() && !r.method.empty() && !isHeaderName(qs(r.method)))
        m_why = tr("\"%1\" is not an HTTP method.").arg(qs(r.method));
    if (m_why.isEmpty() && r.discriminator == Core::Discriminator::ClientAddress && r.method.empty() && (r.pathGlob.empty() || r.pathGlob == "*"))
        m_why = tr("Every request is counted by address already (the per-IP limits): give this rule a method or a path.");
    if (m_why.isEmpty())
        m_why = m_levels->problem();
    showProblem(m_problem, m_buttons, m_why);
}

QString RuleDialog::describeKey(const Core::ThrottleRule& r)
{
    switch (r.discriminator) {
    case Core::Discriminator::ClientAddress: return tr("client address");
    case Core::Discriminator::AddressAndUserAgent: return tr("address + user agent");
    case Core::Discriminator::Header: return tr("%1 header").arg(qs(r.header));
    }
    return {};
}

QString RuleDialog::describeScope(const Core::ThrottleRule& r)
{
    const bool anyPath = r.pathGlob.empty() || r.pathGlob == "*";
    if (r.method.empty() && anyPath)
        return tr("any request");
    if (r.method.empty())
        return tr("any method, %1").arg(qs(r.pathGlob));
    return anyPath ? tr("%1, any path").arg(qs(r.method)) : qs(r.method) + QLatin1Char(' ') + qs(r.pathGlob);
}

} // namespace Floodgate::Ui
