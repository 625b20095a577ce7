// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/Commands.h"

#include "core/CustomerKey.h"

#include "cluster/ClusterKey.h"

#include "app/AdminClient.h"
#include "app/Replay.h"
#include "wire/Codec.h"
#include "wire/ListFile.h"
#include "storage/Store.h"
#include "core/Printable.h"
#include "core/Tuning.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>

#include <pwd.h>
#include <unistd.h>

namespace Floodgate::App {

namespace {

using Core::ListKind;
using Wire::Json;
namespace Codec = Wire::Codec;

void complain(const std::string& line)
{
    std::fprintf(stderr, "floodgate: %s\n", Core::printable(line).c_str());
}

std::unique_ptr<Storage::Store> openStore(const Options& o, const Core::Clock& clock)
{
    Storage::OpenFailure failure;
    auto store = Storage::Store::open(storeOptions(o), clock, &failure);
    if (!store)
        complain(failure.message);
    return store;
}

// For the commands that only read: a database that is not there is not
// made (opening would create one with the defaults and show those).
std::unique_ptr<Storage::Store> openExisting(const Options& o, const Core::Clock& clock)
{
    const std::string path = storeOptions(o).path;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        complain("there is no database at " + path + " (this command creates none: name one with --db)");
        return nullptr;
    }
    return openStore(o, clock);
}

// $USER, or the account's name when the environment has none (cron, sudo -i).
std::string userName()
{
    if (const char* user = std::getenv("USER"); user && *user)
        return user;
    if (const passwd* account = ::getpwuid(::getuid()); account && account->pw_name && *account->pw_name)
        return account->pw_name;
    return "unknown";
}

// Who the audit trail names for a change made here.
Storage::Actor actor()
{
    return Storage::Actor{"cli:" + userName()};
}

// A write through the store's writer, waited for (its COMMIT, or its failure).
template <class Submit>
Storage::Outcome write(Storage::Store& store, Submit&& submit)
{
    store.start(nullptr);
    Storage::Outcome outcome = store.wait(std::forward<Submit>(submit));
    store.stop();
    return outcome;
}

// A refused write: bad input is 2, nothing to change 1, the database 4.
ExitCode refused(const Storage::Outcome& outcome)
{
    complain(outcome.error);
    if (outcome.storageFailed())
        return ExitCode::DatabaseUnusable;
    return outcome.result == Storage::Result::Invalid ? ExitCode::BadInput : ExitCode::Rejected;
}

std::string appliedNote(const Storage::Store& store)
{
    return "; a running Floodgate on " + store.path() + " applies it " + changeAppliedWithin();
}

// One operator change: the database opened (made with the defaults when
// missing), `submit(store, done)` run through the store's writer and waited
// for; on success `report(outcome, note)` says what was done, the note being
// that a running instance applies it.
template <class Submit, class Report>
ExitCode change(const Options& o, Submit submit, Report report)
{
    const Core::SystemClock clock;
    auto store = openStore(o, clock);
    if (!store)
        return ExitCode::DatabaseUnusable;
    const Storage::Outcome outcome = write(*store, [&](auto done) { submit(*store, done); });
    if (!outcome.ok())
        return refused(outcome);
    report(outcome, appliedNote(*store));
    return ExitCode::Done;
}

bool writeFile(const std::string& file, const std::string& text)
{
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
        complain("cannot write " + file + ": " + std::strerror(errno));
        return false;
    }
    return true;
}

std::optional<std::string> readFile(const std::string& file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        complain("cannot read " + file + ": " + std::strerror(errno));
        return std::nullopt;
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// ---- lists ------------------------------------------------------------------

ExitCode exportLists(const Options& o, const std::string& file)
{
    const auto format = Wire::ListFile::formatForPath(file);
    if (!format || *format == Wire::ListFile::Format::Text) {
        complain(file + ": the file name must end in .csv or .json");
        return ExitCode::BadInput;
    }
    const Core::SystemClock clock;
    auto store = openExisting(o, clock);
    if (!store)
        return ExitCode::DatabaseUnusable;
    const Core::Millis now = clock.now();
    std::vector<Core::ListedEntry> all = store->entries();
    std::erase_if(all, [&](const Core::ListedEntry& e) { return !e.entry.activeAt(now); });
    const auto safe = std::size_t(std::count_if(all.begin(), all.end(), [](const Core::ListedEntry& e) { return e.kind == ListKind::Safelist; }));
    if (!writeFile(file, Wire::ListFile::format(all, *format, now)))
        return ExitCode::Rejected;
    std::printf("exported %zu entries (%zu safelist, %zu blocklist) to %s\n", all.size(), safe, all.size() - safe, file.c_str());
    return ExitCode::Done;
}

ExitCode importLists(const Options& o, const std::string& file)
{
    const auto text = readFile(file);
    if (!text)
        return ExitCode::Rejected;
    // By its name (.csv, .json, .txt), else by what it holds: a blocklist
    // feed is often called blocklist.netset or has no extension at all.
    const auto format = Wire::ListFile::formatForPath(file).value_or(Wire::ListFile::formatOfContent(*text));
    const Core::SystemClock clock;
    const Wire::ListFile::Parsed parsed = Wire::ListFile::parse(*text, format, clock.now(), Core::Tuning::defaultListTtlMs);
    if (!parsed.fileError.empty()) {
        complain(file + ": " + parsed.fileError + "; nothing was imported");
        return ExitCode::Rejected;
    }
    if (!parsed.rejected.empty()) {
        for (const auto& r : parsed.rejected)
            std::fprintf(stderr, "%s:%zu: %s\n", Core::printable(file).c_str(), r.line, Core::printable(r.why).c_str());
        std::fprintf(stderr, "floodgate: %zu of %zu %s rejected; nothing was imported (fix them and run the import again)\n",
                     parsed.rejected.size(), parsed.rejected.size() + parsed.rows.size(),
                     format == Wire::ListFile::Format::Json ? "entries" : "lines");
        return ExitCode::Rejected;
    }
    auto store = openStore(o, clock);
    if (!store)
        return ExitCode::DatabaseUnusable;
    const Storage::Outcome outcome = write(*store, [&](auto done) { store->importEntries(parsed.rows, actor(), done); });
    if (!outcome.ok()) {
        complain(file + ": " + outcome.error + "; nothing was imported");
        return outcome.storageFailed() ? ExitCode::DatabaseUnusable : ExitCode::Rejected;
    }
    std::printf("imported %lld entries from %s (%lld replaced existing ones); a running Floodgate on %s applies them %s\n",
                (long long)outcome.value.find("imported")->asInteger(), file.c_str(),
                (long long)outcome.value.find("replaced")->asInteger(), store->path().c_str(), changeAppliedWithin().c_str());
    return ExitCode::Done;
}

// `floodgate block|safelist ADDRESS [--ttl] [--reason]`: decoded as the
// admin API decodes POST /api/v1/lists/LIST, so both take the same input.
ExitCode addToList(const Options& o, ListKind kind)
{
    const Core::SystemClock clock;
    const Core::Millis now = clock.now();
    Json body = Json::object();
    body.set("address", o.args.target);
    body.set("reason", o.args.reason);
    if (o.args.ttl)
        body.set("ttl", *o.args.ttl == "permanent" ? Json() : Json(*o.args.ttl));
    std::string why;
    const auto in = Codec::entryFromJson(body, now, Core::Tuning::defaultListTtlMs, &why);
    if (!in) {
        complain(o.command[0] + " " + o.args.target + ": " + why);
        return ExitCode::BadInput;
    }
    Core::ListEntry entry;
    entry.range = in->range;
    entry.reason = in->reason;
    entry.expiresAt = in->expiresAt;
    entry.createdAt = now;  // the TTL was counted from here
    entry.source = Core::ListSource::Operator;
    return change(
        o, [&](Storage::Store& store, auto done) { store.addEntry(kind, entry, actor(), done); },
        [&](const Storage::Outcome& outcome, const std::string& note) {
            const std::string until = entry.expiresAt == Core::NeverExpires
                                          ? "permanently"
                                          : "for " + Codec::humanDuration(entry.expiresAt - now) + " (until " + Codec::formatTime(entry.expiresAt) + ")";
            std::printf("%s %s on the %s %s%s\n", entry.range.toString().c_str(), outcome.result == Storage::Result::Created ? "put" : "kept",
                        Core::toString(kind), until.c_str(), note.c_str());
        });
}

ExitCode removeFromList(const Options& o, ListKind kind)
{
    std::string why;
    const auto range = Core::Cidr::parse(o.args.target, &why);
    if (!range) {
        complain(o.command[0] + " " + o.args.target + ": address: " + why);
        return ExitCode::BadInput;
    }
    return change(
        o, [&](Storage::Store& store, auto done) { store.removeEntry(kind, *range, actor(), done); },
        [&](const Storage::Outcome&, const std::string& note) {
            std::printf("%s taken off the %s%s\n", range->toString().c_str(), Core::toString(kind), note.c_str());
        });
}

ExitCode showLists(const Options& o)
{
    const Core::SystemClock clock;
    auto store = openExisting(o, clock);
    if (!store)
        return ExitCode::DatabaseUnusable;
    const Core::Millis now = clock.now();
    const std::vector<Core::ListedEntry> all = store->entries();
    std::vector<ListKind> kinds = {ListKind::Blocklist, ListKind::Safelist};
    if (!o.args.target.empty())
        kinds = {*Core::listKindFromString(o.args.target)};
    Json asJson = Json::object();
    for (const ListKind kind : kinds) {
        Json entries = Json::array();
        std::string text;
        for (const Core::ListedEntry& e : all) {
            if (e.kind != kind || !e.entry.activeAt(now))
                continue;
            entries.push(Codec::toJson(e.entry, kind, now));
            const std::string left = e.entry.expiresAt == Core::NeverExpires ? "permanent" : Codec::humanDuration(e.entry.expiresAt - now);
            char line[512];
            std::snprintf(line, sizeof line, "  %-43s %-12s %-9s %-20s ", e.entry.range.toString().c_str(), left.c_str(),
                          Core::toString(e.entry.source), Core::printable(e.entry.createdBy).c_str());
            text += line + Core::printable(e.entry.reason) + "\n";
        }
        const std::size_t count = entries.asArray().size();
        if (o.args.json) {
            Json list = Json::object();
            list.set("list", Core::toString(kind));
            list.set("count", count);
            list.set("entries", std::move(entries));
            if (kinds.size() == 1)
                asJson = std::move(list);
            else
                asJson.set(Core::toString(kind), std::move(list));
            continue;
        }
        std::printf("%s: %zu %s\n", Core::toString(kind), count, count == 1 ? "entry" : "entries");
        if (count > 0)
            std::printf("  %-43s %-12s %-9s %-20s %s\n%s", "ADDRESS", "TIME LEFT", "SOURCE", "BY", "REASON", text.c_str());
    }
    if (o.args.json)
        std::printf("%s\n", asJson.dump().c_str());
    return ExitCode::Done;
}

// ---- tiers and customers ----------------------------------------------------------

// "100/1m 5000/1h" as the levels array the decoders read.
std::optional<Json> levelsFromText(const std::vector<std::string>& texts)
{
    Json levels = Json::array();
    for (const std::string& t : texts) {
        std::string why;
        auto level = Codec::levelFromText(t, &why);
        if (!level) {
            complain(why);
            return std::nullopt;
        }
        levels.push(std::move(*level));
    }
    return levels;
}

std::string levelsText(const std::vector<Core::Level>& levels)
{
    std::string text;
    for (const Core::Level& l : levels)
        text += (text.empty() ? "" : "  ") + Codec::levelText(l);
    return text.empty() ? "-" : text;
}

// `tiers show --json`, `customers show --json`: the API's collection shape, {"tiers": [...]}.
template <class T>
ExitCode printCollection(const char* plural, const std::vector<T>& items)
{
    Json list = Json::array();
    for (const T& item : items)
        list.push(Codec::toJson(item));
    Json body = Json::object();
    body.set(plural, std::move(list));
    std::printf("%s\n", body.dump().c_str());
    return ExitCode::Done;
}

// `tiers show`, `customers show`: from the stored configuration.
ExitCode showConfig(const Options& o, bool tiers)
{
    const Core::SystemClock clock;
    auto store = openExisting(o, clock);
    if (!store)
        return ExitCode::DatabaseUnusable;
    const Core::EngineConfig config = store->config();
    if (o.args.json)
        return tiers ? printCollection("tiers", config.tiers) : printCollection("customers", config.customers);
    if (tiers) {
        std::printf("%-20s %s\n", "TIER", "LEVELS (LIMIT/PERIOD)");
        for (const Core::Tier& t : config.tiers)
            std::printf("%-20s %s\n", Core::printable(t.name).c_str(), levelsText(t.levels).c_str());
        return ExitCode::Done;
    }
    const Core::Millis now = clock.now();
    std::printf("%-24s %-24s %-16s %-20s %s\n", "CUSTOMER", "NAME", "TIER", "OVERRIDES", "API KEYS");
    for (const Core::Customer& c : config.customers) {
        std::string keys;
        for (const Core::CustomerKey& k : c.keys)
            keys += (keys.empty() ? "" : ", ") + Core::printable(k.id)
                + (k.expiresAt == 0 ? std::string()
                                    : k.expiresAt <= now ? " (expired)" : " (expires in " + Codec::humanDuration(k.expiresAt - now) + ")");
        std::printf("%-24s %-24s %-16s %-20s %s\n", Core::printable(c.id).c_str(), c.name.empty() ? "-" : Core::printable(c.name).c_str(),
                    Core::printable(c.tier).c_str(), levelsText(c.overrides).c_str(), keys.empty() ? "none" : keys.c_str());
    }
    // Core's one definition: no key valid now, and customer_auth api_key.
    if (const std::size_t keyless = Core::keylessCustomers(config, now).size(); keyless > 0)
        std::printf("%zu customer%s without an API key count%s as anonymous clients (customer_auth api_key): floodgate customers key ID\n",
                    keyless, keyless == 1 ? "" : "s", keyless == 1 ? "s" : "");
    return ExitCode::Done;
}

// What `tiers set` changed, one line a level, by period: "  changed
// 100/1m -> 200/1m", "  removed 5000/1h", "  added 20000/1d".
std::string levelChanges(const std::vector<Core::Level>& before, const std::vector<Core::Level>& after)
{
    std::map<Core::Millis, std::pair<const Core::Level*, const Core::Level*>> byPeriod;
    for (const Core::Level& l : before)
        byPeriod[l.periodMs].first = &l;
    for (const Core::Level& l : after)
        byPeriod[l.periodMs].second = &l;
    std::string text;
    for (const auto& [period, was] : byPeriod) {
        const auto& [old, now] = was;
        if (old && now && Codec::levelText(*old) != Codec::levelText(*now))
            text += "  changed " + Codec::levelText(*old) + " -> " + Codec::levelText(*now) + "\n";
        else if (old && !now)
            text += "  removed " + Codec::levelText(*old) + "\n";
        else if (!old && now)
            text += "  added " + Codec::levelText(*now) + "\n";
    }
    return text;
}

// `tiers set NAME LEVEL...` replaces every level; `tiers set NAME --level
// LEVEL` changes or adds the level of that period and keeps the others.
// Either way each level removed, changed or added is said.
ExitCode setTier(const Options& o)
{
    const std::string& name = o.args.target;
    if (!Codec::validName(name, 40)) {
        complain("tier name \"" + name + "\": a tier name is 1-40 bytes of printable UTF-8 without '/'");
        return ExitCode::BadInput;
    }
    const bool one = !o.args.level.empty();
    if (one == !o.args.levels.empty()) {
        complain("tiers set " + name
                 + (one ? ": give LIMIT/PERIOD... (they replace every level) or --level LIMIT/PERIOD (changes that period's), not both"
                        : ": give its levels, LIMIT/PERIOD... (they replace every level), or --level LIMIT/PERIOD (changes that period's)"));
        return ExitCode::BadInput;
    }
    const auto levels = levelsFromText(one ? o.args.level : o.args.levels);
    if (!levels)
        return ExitCode::BadInput;
    Json body = Json::object();
    body.set("levels", *levels);
    std::string why;
    auto tier = Codec::tierFromJson(body, name, &why);  // each level checked, no period twice
    if (!tier) {
        complain("tier " + name + ": " + why);
        return ExitCode::BadInput;
    }
    const Core::SystemClock clock;
    auto store = openStore(o, clock);
    if (!store)
        return ExitCode::DatabaseUnusable;
    const Core::EngineConfig config = store->config();
    std::string ambiguous;
    const Core::Tier* stored = Core::findTier(config.tiers, name, &ambiguous);
    if (!ambiguous.empty()) {
        complain(ambiguous);
        return ExitCode::BadInput;
    }
    const std::vector<Core::Level> before = stored ? stored->levels : std::vector<Core::Level>{};
    if (one) {
        std::vector<Core::Level> merged = before;
        for (const Core::Level& l : tier->levels) {
            auto same = std::find_if(merged.begin(), merged.end(), [&](const Core::Level& m) { return m.periodMs == l.periodMs; });
            if (same != merged.end())
                *same = l;
            else
                merged.push_back(l);
        }
        std::sort(merged.begin(), merged.end(), [](const Core::Level& a, const Core::Level& b) { return a.periodMs < b.periodMs; });
        tier->levels = std::move(merged);
    }
    const std::string spelt = stored ? stored->name : name;
    if (stored && levelChanges(before, tier->levels).empty()) {
        std::printf("tier %s unchanged: %s\n", spelt.c_str(), levelsText(before).c_str());
        return ExitCode::Done;
    }
    const Storage::Outcome outcome = write(*store, [&](auto done) { store->putTier(*tier, actor(), done); });
    if (!outcome.ok())
        return refused(outcome);
    const std::string named = spelt == name ? "" : " (\"" + name + "\" is " + spelt + ": tier names are matched case-insensitively)";
    if (outcome.result == Storage::Result::Created) {
        std::printf("tier %s created: %s%s\n", spelt.c_str(), levelsText(tier->levels).c_str(), appliedNote(*store).c_str());
        return ExitCode::Done;
    }
    std::printf("tier %s set%s: %s (was %s)%s\n%s", spelt.c_str(), named.c_str(), levelsText(tier->levels).c_str(), levelsText(before).c_str(),
                appliedNote(*store).c_str(), levelChanges(before, tier->levels).c_str());
    return ExitCode::Done;
}

// `tiers remove NAME`: as DELETE /api/v1/tiers/NAME, refused while customers are on it.
ExitCode removeTier(const Options& o)
{
    const Core::SystemClock clock;
    auto store = openExisting(o, clock);
    if (!store)
        return ExitCode::DatabaseUnusable;
    const Core::EngineConfig config = store->config();
    const Storage::Outcome outcome = write(*store, [&](auto done) { store->deleteTier(o.args.target, actor(), done); });
    if (!outcome.ok())
        return refused(outcome);
    const std::string name = outcome.value.find("name")->asString();  // as it was spelt
    const Core::Tier* gone = Core::findTier(config.tiers, name);
    std::printf("tier %s removed (it was %s)%s\n", name.c_str(), gone ? levelsText(gone->levels).c_str() : "-", appliedNote(*store).c_str());
    return ExitCode::Done;
}

// A key made a moment ago: printed this once (only its SHA-256 is stored),
// with how the customer sends it, and a word when it proves nothing yet.
void printNewKey(const std::string& secret, const Core::Settings& settings)
{
    std::printf("api key: %s\n", secret.c_str());
    std::printf("  shown this once: only its SHA-256 is stored. The customer sends it as \"%s: %s\".\n",
                settings.customerKeyHeader.c_str(), secret.c_str());
    if (settings.customerAuth == Core::CustomerAuth::TrustedHeader)
        std::printf("  note: customer_auth is trusted_header: keys prove nothing until it is api_key or api_key_or_trusted_header\n");
}

ExitCode setCustomer(const Options& o)
{
    const std::string& id = o.args.target;
    if (!Codec::validName(id, 100)) {
        complain("customer id \"" + id + "\": a customer id is 1-100 bytes of printable UTF-8 without '/'");
        return ExitCode::BadInput;
    }
    std::optional<Json> overrides;
    if (!o.args.overrides.empty() && !(overrides = levelsFromText(o.args.overrides)))
        return ExitCode::BadInput;
    Json body = Json::object();
    body.set("tier", o.args.tier);
    if (o.args.name)
        body.set("name", *o.args.name);
    if (overrides)
        body.set("overrides", *overrides);
    std::string why;
    if (!Codec::customerFromJson(body, id, &why)) {  // checked before anything is opened
        complain("customer " + id + ": " + why);
        return ExitCode::BadInput;
    }
    // A database that is not there yet would be made with the default tiers:
    // a tier missing from those is refused before anything is created.
    std::error_code ec;
    if (!std::filesystem::exists(storeOptions(o).path, ec)) {
        const auto tiers = Core::defaultConfig().tiers;
        if (!Core::findTier(tiers, o.args.tier)) {
            std::string names;
            for (const Core::Tier& t : tiers)
                names += (names.empty() ? "" : ", ") + t.name;
            complain("customer " + id + ": tier \"" + o.args.tier + "\" is not a known tier (a new database has " + names + ")");
            return ExitCode::BadInput;
        }
    }
    const Core::SystemClock clock;
    auto store = openStore(o, clock);
    if (!store)
        return ExitCode::DatabaseUnusable;
    // What is not given stays as stored.
    const Core::EngineConfig config = store->config();
    const auto stored = std::find_if(config.customers.begin(), config.customers.end(), [&](const Core::Customer& c) { return c.id == id; });
    if (stored != config.customers.end()) {
        const Json was = Codec::toJson(*stored);
        if (!o.args.name)
            body.set("name", *was.find("name"));
        if (!overrides && !o.args.noOverrides)
            body.set("overrides", *was.find("overrides"));
    }
    auto customer = Codec::customerFromJson(body, id, &why);
    if (!customer) {
        complain("customer " + id + ": " + why);
        return ExitCode::BadInput;
    }
    // A new customer gets its first key (a stored one keeps its keys).
    const auto fresh = Core::makeCustomerKey(clock.now());
    if (!fresh) {
        complain("customer " + id + ": no random bytes for its API key (OpenSSL's generator failed)");
        return ExitCode::Rejected;
    }
    customer->keys = {fresh->key};
    const Storage::Outcome outcome =
        write(*store, [&](auto done) { store->putCustomer(*customer, actor(), done, Storage::Store::Keys::Keep); });
    if (!outcome.ok())
        return refused(outcome);
    const bool created = outcome.result == Storage::Result::Created;
    std::printf("customer %s %s: tier %s, overrides %s%s\n", id.c_str(), created ? "created" : "set",
                outcome.value.find("tier")->asString().c_str(), levelsText(customer->overrides).c_str(), appliedNote(*store).c_str());
    if (created)
        printNewKey(fresh->secret, config.settings);
    return ExitCode::Done;
}

// `floodgate customers key ID [--keep-old DURATION | --revoke KEY_ID]`
ExitCode customerKey(const Options& o)
{
    const std::string& id = o.args.target;
    if (!o.args.revoke.empty())
        return change(
            o, [&](Storage::Store& store, auto done) { store.revokeCustomerKey(id, o.args.revoke, actor(), done); },
            [&](const Storage::Outcome&, const std::string& note) {
                std::printf("key %s of customer %s revoked%s\n", o.args.revoke.c_str(), id.c_str(), note.c_str());
            });
    Core::Millis keepOld = 0;
    if (o.args.keepOld) {
        std::string why;
        const auto d = Codec::parseDuration(Json(*o.args.keepOld), &why);
        if (!d) {
            complain("customers key " + id + ": --keep-old " + why);
            return ExitCode::BadInput;
        }
        keepOld = *d;
    }
    const Core::SystemClock clock;
    const auto fresh = Core::makeCustomerKey(clock.now());
    if (!fresh) {
        complain("customers key " + id + ": no random bytes for the key (OpenSSL's generator failed)");
        return ExitCode::Rejected;
    }
    auto store = openExisting(o, clock);
    if (!store)
        return ExitCode::DatabaseUnusable;
    const Storage::Outcome outcome = write(*store, [&](auto done) { store->addCustomerKey(id, fresh->key, keepOld, actor(), done); });
    if (!outcome.ok())
        return refused(outcome);
    const std::size_t others = outcome.value.find("keys")->asArray().size() - 1;
    std::printf("customer %s has a new key %s%s%s\n", id.c_str(), fresh->key.id.c_str(),
                keepOld > 0 && others > 0 ? ("; its other " + std::to_string(others) + (others == 1 ? " key stays" : " keys stay") + " valid for "
                                             + Codec::humanDuration(keepOld))
                                                .c_str()
                                          : "; its other keys are revoked",
                appliedNote(*store).c_str());
    printNewKey(fresh->secret, store->config().settings);
    return ExitCode::Done;
}

ExitCode removeCustomer(const Options& o)
{
    return change(
        o, [&](Storage::Store& store, auto done) { store.deleteCustomer(o.args.target, actor(), done); },
        [&](const Storage::Outcome&, const std::string& note) { std::printf("customer %s removed%s\n", o.args.target.c_str(), note.c_str()); });
}

// ---- rules ------------------------------------------------------------------------

ExitCode showOrExportRules(const Options& o, bool toFile)
{
    const Core::SystemClock clock;
    auto store = openExisting(o, clock);
    if (!store)
        return ExitCode::DatabaseUnusable;
    const std::string text = Codec::rulesToJson(store->config()).dump() + "\n";
    if (!toFile) {
        std::fputs(text.c_str(), stdout);
        return ExitCode::Done;
    }
    if (!writeFile(o.args.file, text))
        return ExitCode::Rejected;
    std::printf("exported the rules of %s to %s\n", store->path().c_str(), o.args.file.c_str());
    return ExitCode::Done;
}

ExitCode importRules(const Options& o)
{
    const auto text = readFile(o.args.file);
    if (!text)
        return ExitCode::Rejected;
    std::string why;
    const auto document = Json::parse(*text, &why);
    if (!document) {
        complain(o.args.file + ": " + why + "; nothing was imported");
        return ExitCode::Rejected;
    }
    const Core::SystemClock clock;
    auto store = openStore(o, clock);
    if (!store)
        return ExitCode::DatabaseUnusable;
    // Checked against the rules stored first, so a bad document is named
    // without queueing a write; then applied to the rules as committed.
    Core::EngineConfig check = store->config();
    if (!Codec::rulesFromJson(*document, check, &why)) {
        complain(o.args.file + ": " + why + "; nothing was imported");
        return ExitCode::Rejected;
    }
    const Storage::Outcome outcome = write(*store, [&](auto done) { store->putRulesDocument(*document, actor(), done); });
    if (!outcome.ok()) {
        complain(o.args.file + ": " + outcome.error + "; nothing was imported");
        return outcome.storageFailed() ? ExitCode::DatabaseUnusable : ExitCode::Rejected;
    }
    std::printf("imported the rules from %s%s\n", o.args.file.c_str(), appliedNote(*store).c_str());
    return ExitCode::Done;
}

// ---- explain ------------------------------------------------------------------------

std::string text(const Json* v)
{
    if (!v || v->isNull())
        return "-";
    if (v->isString())
        return Core::printable(v->asString());
    return v->dump();
}

ExitCode explain(const Options& o)
{
    std::string why;
    const auto address = Core::IpAddress::parse(o.args.target, &why);
    if (!address) {
        complain("explain " + o.args.target + ": address: " + why);
        return ExitCode::BadInput;
    }
    const HostPort at = o.admin.value_or(*Options{}.admin);  // --admin off in the file: ask where the default would be
    std::string token = o.args.token;
    if (token.empty()) {
        const Core::SystemClock clock;
        auto store = openExisting(o, clock);
        if (!store)
            return ExitCode::DatabaseUnusable;
        token = store->adminToken();
    }
    const std::string where = at.host + ":" + std::to_string(at.port);
    auto get = [&](const std::string& target) -> std::optional<Json> {
        std::string fail;
        const auto answer = adminGet(at, target, token, &fail);
        if (!answer) {
            complain("no admin API answers on " + where + ": " + fail + " (is Floodgate running? --admin ADDR:PORT names it)");
            return std::nullopt;
        }
        if (answer->status == 401) {
            complain("the admin API on " + where + " refused the token (a different database? --db or --token)");
            return std::nullopt;
        }
        auto body = Json::parse(answer->body, &fail);
        if (!body || (answer->status != 200 && answer->status != 404)) {
            complain("the admin API on " + where + " answered " + std::to_string(answer->status) + " to " + target);
            return std::nullopt;
        }
        if (answer->status == 404)
            return Json();
        return body;
    };
    const std::string name = address->toString();
    const auto client = get("/api/v1/clients/" + name);
    if (!client)
        return ExitCode::Rejected;
    std::optional<Json> lists[2] = {get("/api/v1/lists/blocklist"), get("/api/v1/lists/safelist")};
    if (!lists[0] || !lists[1])
        return ExitCode::Rejected;
    const auto events = get("/api/v1/events?limit=" + std::to_string(Core::Tuning::maxEventsKept));
    if (!events)
        return ExitCode::Rejected;

    if (client->isNull()) {
        std::printf("%s: not tracked (no requests in the windows the rules keep)\n", name.c_str());
    } else {
        std::printf("%s: %s (counted as %s%s)\n", name.c_str(), text(client->find("state")).c_str(), text(client->find("address")).c_str(),
                    client->find("customer")->isNull() ? "" : (", customer " + text(client->find("customer"))).c_str());
        std::printf("  last seen %s, %s requests in the last 60 s\n", text(client->find("last_seen")).c_str(), text(client->find("last_60s")).c_str());
        std::printf("  %-24s %-8s %8s %8s %10s %8s\n", "LEVEL", "PERIOD", "COUNT", "LIMIT", "REMAINING", "RESET");
        for (const Json& l : client->find("levels")->asArray())
            std::printf("  %-24s %-8s %8s %8s %10s %8s%s\n", text(l.find("name")).c_str(),
                        Core::formatPeriod(Core::Millis(l.find("period")->asNumber() * 1000)).c_str(), text(l.find("used")).c_str(),
                        text(l.find("limit")).c_str(), text(l.find("remaining")).c_str(), (text(l.find("reset")) + " s").c_str(),
                        l.find("refusing")->asBool() ? "  refusing" : "");
    }
    bool listed = false;
    for (const auto& list : lists) {
        for (const Json& e : list->find("entries")->asArray()) {
            const auto range = Core::Cidr::parse(e.find("address")->asString());
            if (!range || !range->contains(*address))
                continue;
            if (!listed)
                std::printf("  list entries that cover it:\n");
            listed = true;
            const Json* in = e.find("expires_in");
            std::printf("    %s %s, %s, by %s: %s\n", text(e.find("list")).c_str(), text(e.find("address")).c_str(),
                        in->isNull() ? "permanent" : (Codec::humanDuration(in->asInteger() * 1000) + " left").c_str(),
                        text(e.find("created_by")).c_str(), text(e.find("reason")).c_str());
        }
    }
    if (!listed)
        std::printf("  on no list\n");
    std::vector<const Json*> refusals;
    for (const Json& e : events->find("events")->asArray())
        if (text(e.find("ip")) == name)
            refusals.push_back(&e);
    constexpr std::size_t SHOWN = 10;
    if (refusals.empty()) {
        std::printf("  no refusals among the last %zu the instance keeps\n", events->find("events")->asArray().size());
    } else {
        std::printf("  last refusals (%zu of %zu):\n", std::min(SHOWN, refusals.size()), refusals.size());
        for (std::size_t i = refusals.size() > SHOWN ? refusals.size() - SHOWN : 0; i < refusals.size(); ++i) {
            const Json& e = *refusals[i];
            std::printf("    %s %s %s %s: %s\n", text(e.find("time")).c_str(), text(e.find("method")).c_str(), text(e.find("path")).c_str(),
                        text(e.find("action")).c_str(), text(e.find("why")).c_str());
        }
    }
    return ExitCode::Done;
}

} // namespace

ExitCode runCommand(const Options& o)
{
    const std::vector<std::string>& c = o.command;
    const std::string what = c.size() > 1 ? c[0] + " " + c[1] : c[0];
    if (what == "token") {
        const Core::SystemClock clock;
        auto store = openStore(o, clock);
        if (!store)
            return ExitCode::DatabaseUnusable;
        std::printf("%s\n", store->adminToken().c_str());
        return ExitCode::Done;
    }
    if (what == "cluster-key") {
        std::string why;
        if (!Cluster::ClusterKey::create(o.args.file, &why)) {
            std::fprintf(stderr, "floodgate: %s\n", why.c_str());
            return ExitCode::Rejected;
        }
        std::printf("wrote a new cluster key to %s (mode 0600): copy it to every node of the cluster and give each --cluster-key %s\n",
                    o.args.file.c_str(), o.args.file.c_str());
        return ExitCode::Done;
    }
    if (what == "block")
        return addToList(o, ListKind::Blocklist);
    if (what == "safelist")
        return addToList(o, ListKind::Safelist);
    if (what == "unblock")
        return removeFromList(o, ListKind::Blocklist);
    if (what == "unsafelist")
        return removeFromList(o, ListKind::Safelist);
    if (what == "lists show")
        return showLists(o);
    if (what == "lists export")
        return exportLists(o, o.args.file);
    if (what == "lists import")
        return importLists(o, o.args.file);
    if (what == "tiers show")
        return showConfig(o, true);
    if (what == "tiers set")
        return setTier(o);
    if (what == "tiers remove")
        return removeTier(o);
    if (what == "customers show")
        return showConfig(o, false);
    if (what == "customers set")
        return setCustomer(o);
    if (what == "customers key")
        return customerKey(o);
    if (what == "customers remove")
        return removeCustomer(o);
    if (what == "rules show")
        return showOrExportRules(o, false);
    if (what == "rules export")
        return showOrExportRules(o, true);
    if (what == "rules import")
        return importRules(o);
    if (what == "explain")
        return explain(o);
    if (what == "replay") {
        return runReplay(o);
    }
    complain("unknown command \"" + what + "\" (see --help)");
    return ExitCode::BadInput;
}

} // namespace Floodgate::App
