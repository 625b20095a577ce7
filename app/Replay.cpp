// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/Replay.h"

#include "core/Printable.h"
#include "replay/Replay.h"
#include "replay/Report.h"
#include "storage/Store.h"
#include "wire/Codec.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace Floodgate::App {

namespace {

std::optional<std::string> readWholeFile(const std::string& path, std::string* why)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        *why = std::strerror(errno);
        return std::nullopt;
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// The configuration to replay through: the database's (rules, tiers,
// customers, safelist and blocklist), a rules file's sections laid over it
// or over the defaults. Returns the exit code on failure.
std::optional<ExitCode> loadConfiguration(const Options& o, Replay::Configuration& out)
{
    const ReplayOptions& r = o.replay;
    const bool useDatabase = r.rulesFile.empty() || !o.db.empty();
    if (useDatabase) {
        const Storage::StoreOptions so = storeOptions(o);
        struct stat st{};
        if (::stat(so.path.c_str(), &st) != 0) {
            std::fprintf(stderr,
                         "floodgate: no database at %s (replay reads the rules from it and never creates one); give --db PATH or "
                         "--rules FILE.json\n",
                         so.path.c_str());
            return ExitCode::DatabaseUnusable;
        }
        const Core::SystemClock clock;
        Storage::OpenFailure failure;
        auto store = Storage::Store::open(so, clock, &failure);
        if (!store) {
            std::fprintf(stderr, "floodgate: %s\n", Core::printable(failure.message).c_str());
            return ExitCode::DatabaseUnusable;
        }
        Storage::Loaded loaded = store->load();
        out.config = std::move(loaded.config);
        out.safelist = std::move(loaded.safelist);
        out.blocklist = std::move(loaded.blocklist);
        out.name = "the rules in " + so.path;
    } else {
        out.config = Core::defaultConfig();
        out.name = "";
    }
    if (!r.rulesFile.empty()) {
        std::string why;
        const auto text = readWholeFile(r.rulesFile, &why);
        if (!text) {
            std::fprintf(stderr, "floodgate: cannot read %s: %s\n", r.rulesFile.c_str(), Core::printable(why).c_str());
            return ExitCode::BadInput;
        }
        const auto json = Wire::Json::parse(*text, &why);
        if (!json) {
            std::fprintf(stderr, "floodgate: %s: not JSON: %s\n", r.rulesFile.c_str(), Core::printable(why).c_str());
            return ExitCode::BadInput;
        }
        // The document GET /api/v1/rules answers (and `floodgate rules export` writes).
        if (!Wire::Codec::rulesFromJson(*json, out.config, &why)) {
            std::fprintf(stderr, "floodgate: %s: %s\n", r.rulesFile.c_str(), Core::printable(why).c_str());
            return ExitCode::BadInput;
        }
        if (auto invalid = Core::validate(out.config)) {
            std::fprintf(stderr, "floodgate: %s: %s\n", r.rulesFile.c_str(), Core::printable(*invalid).c_str());
            return ExitCode::BadInput;
        }
        out.name = out.name.empty() ? "the rules in " + r.rulesFile : out.name + " with " + r.rulesFile;
    }
    return std::nullopt;
}

// A progress line on stderr when it is a terminal and the replay has taken
// more than a second: rewritten in place, cleared at the end.
class ProgressLine {
public:
    ProgressLine() : m_tty(::isatty(STDERR_FILENO) == 1), m_start(std::chrono::steady_clock::now()) {}
    void show(const Replay::Progress& p)
    {
        if (!m_tty)
            return;
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
        if (s < 1.0)
            return;
        const double pct = p.bytesTotal ? 100.0 * double(p.bytesDone) / double(p.bytesTotal) : 0.0;
        std::fprintf(stderr, "\rreplay: %5.1f%%  %llu lines  %.0f lines/s ", pct, (unsigned long long)p.lines, double(p.lines) / s);
        m_shown = true;
    }
    void clear()
    {
        if (m_shown)
            std::fprintf(stderr, "\r%*s\r", 60, "");
    }

private:
    bool m_tty;
    bool m_shown = false;
    std::chrono::steady_clock::time_point m_start;
};

} // namespace

ExitCode runReplay(const Options& o)
{
    const ReplayOptions& r = o.replay;
    Replay::Input input;
    input.files = r.logs;
    input.trustedProxies = r.trustedProxies;
    input.customerParam = r.customerParam;
    const auto format = Replay::formatFromName(r.format);
    if (!format) {
        std::fprintf(stderr, "floodgate: --format %s: expected auto, combined, common, nginx-json or floodgate-csv\n", r.format.c_str());
        return ExitCode::BadInput;
    }
    input.format = *format;
    for (const auto& [text, slot] : {std::pair{&r.from, &input.from}, std::pair{&r.to, &input.to}}) {
        if (text->empty())
            continue;
        std::string why;
        const auto t = Wire::Codec::parseTime(*text, &why);
        if (!t) {
            std::fprintf(stderr, "floodgate: %s %s: expected an RFC 3339 time such as 2026-11-22T05:00:00Z (%s)\n",
                         slot == &input.from ? "--from" : "--to", text->c_str(), why.c_str());
            return ExitCode::BadInput;
        }
        *slot = *t;
    }
    if (input.from && input.to && *input.from > *input.to) {
        std::fprintf(stderr, "floodgate: --from is after --to\n");
        return ExitCode::BadInput;
    }
    // Every file readable before anything runs: a typo costs nothing.
    for (const std::string& path : r.logs) {
        struct stat st{};
        if (::stat(path.c_str(), &st) != 0 || ::access(path.c_str(), R_OK) != 0) {
            std::fprintf(stderr, "floodgate: cannot read %s: %s\n", path.c_str(), std::strerror(errno));
            return ExitCode::BadInput;
        }
        if (S_ISDIR(st.st_mode)) {
            std::fprintf(stderr, "floodgate: cannot read %s: it is a folder\n", path.c_str());
            return ExitCode::BadInput;
        }
    }
    Replay::Configuration configuration;
    if (auto code = loadConfiguration(o, configuration))
        return *code;

    std::FILE* decisions = nullptr;
    std::string rows;
    if (!r.decisionsOut.empty()) {
        decisions = std::fopen(r.decisionsOut.c_str(), "wb");
        if (!decisions) {
            std::fprintf(stderr, "floodgate: cannot write %s: %s\n", r.decisionsOut.c_str(), std::strerror(errno));
            return ExitCode::BadInput;
        }
        rows = Replay::decisionsHeader();
        input.onDecision = [&](const Replay::DecisionEvent& e) {
            Replay::appendDecisionRow(rows, e, r.logs);
            if (rows.size() >= 1 << 20) {
                std::fwrite(rows.data(), 1, rows.size(), decisions);
                rows.clear();
            }
        };
    }
    ProgressLine progress;
    input.progress = [&](const Replay::Progress& p) { progress.show(p); };

    const Replay::Result result = Replay::replay(input, {configuration});
    progress.clear();
    if (!result.fatal.empty()) {
        std::fprintf(stderr, "floodgate: %s\n", Core::printable(result.fatal).c_str());
        if (decisions)
            std::fclose(decisions);
        return ExitCode::BadInput;
    }
    ExitCode code = ExitCode::Done;
    if (decisions) {
        std::fwrite(rows.data(), 1, rows.size(), decisions);
        const bool failed = std::ferror(decisions) != 0;
        if (std::fclose(decisions) != 0 || failed) {
            std::fprintf(stderr, "floodgate: cannot write %s: %s\n", r.decisionsOut.c_str(), std::strerror(errno));
            code = ExitCode::BadInput;
        }
    }
    if (r.json)
        std::printf("%s\n", Replay::jsonReport(result).dump().c_str());
    else
        std::fputs(Replay::textReport(result).c_str(), stdout);
    for (const Replay::FileSummary& f : result.files)
        if (!f.error.empty()) {
            std::fprintf(stderr, "floodgate: %s: %s; the report covers the lines before it\n", Core::printable(f.path).c_str(),
                         Core::printable(f.error).c_str());
            code = ExitCode::BadInput;
        }
    return code;
}

} // namespace Floodgate::App
