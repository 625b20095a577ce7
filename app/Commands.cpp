// SPDX-License-Identifier: MIT
#include "app/Commands.h"

#include "app/Replay.h"

#include "wire/ListFile.h"
#include "storage/Store.h"
#include "core/Tuning.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace Floodgate::App {

namespace {

std::unique_ptr<Storage::Store> openStore(const Options& o, const Core::Clock& clock)
{
    Storage::OpenFailure failure;
    auto store = Storage::Store::open(storeOptions(o), clock, &failure);
    if (!store)
        std::fprintf(stderr, "floodgate: %s\n", failure.message.c_str());
    return store;
}

std::string userName()
{
    const char* user = std::getenv("USER");
    return user && *user ? user : "unknown";
}

int exportLists(const Options& o, const std::string& file)
{
    const auto format = Wire::ListFile::formatForPath(file);
    if (!format) {
        std::fprintf(stderr, "floodgate: %s: the file name must end in .csv or .json\n", file.c_str());
        return 2;
    }
    const Core::SystemClock clock;
    auto store = openStore(o, clock);
    if (!store)
        return 4;
    const Core::Millis now = clock.now();
    std::vector<Core::ListedEntry> all = store->entries();
    std::erase_if(all, [&](const Core::ListedEntry& e) { return !e.entry.activeAt(now); });
    const auto safe = std::size_t(std::count_if(all.begin(), all.end(), [](const Core::ListedEntry& e) { return e.kind == Core::ListKind::Safelist; }));
    const std::string text = Wire::ListFile::format(all, *format, now);
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
        std::fprintf(stderr, "floodgate: cannot write %s: %s\n", file.c_str(), std::strerror(errno));
        return 1;
    }
    std::printf("exported %zu entries (%zu safelist, %zu blocklist) to %s\n", all.size(), safe, all.size() - safe, file.c_str());
    return 0;
}

int importLists(const Options& o, const std::string& file)
{
    const auto format = Wire::ListFile::formatForPath(file);
    if (!format) {
        std::fprintf(stderr, "floodgate: %s: the file name must end in .csv or .json\n", file.c_str());
        return 2;
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "floodgate: cannot read %s: %s\n", file.c_str(), std::strerror(errno));
        return 1;
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    const Core::SystemClock clock;
    const Wire::ListFile::Parsed parsed = Wire::ListFile::parse(buffer.str(), *format, clock.now(), Core::Tuning::defaultListTtlMs);
    if (!parsed.fileError.empty()) {
        std::fprintf(stderr, "floodgate: %s: %s; nothing was imported\n", file.c_str(), parsed.fileError.c_str());
        return 1;
    }
    if (!parsed.rejected.empty()) {
        for (const auto& r : parsed.rejected)
            std::fprintf(stderr, "%s:%zu: %s\n", file.c_str(), r.line, r.why.c_str());
        std::fprintf(stderr, "floodgate: %zu of %zu %s rejected; nothing was imported (fix them and run the import again)\n",
                     parsed.rejected.size(), parsed.rejected.size() + parsed.rows.size(),
                     *format == Wire::ListFile::Format::Csv ? "lines" : "entries");
        return 1;
    }
    auto store = openStore(o, clock);
    if (!store)
        return 4;
    store->start(nullptr);
    const Storage::Outcome outcome =
        store->wait([&](auto done) { store->importEntries(parsed.rows, Storage::Actor{"cli:" + userName()}, done); });
    store->stop();
    if (!outcome.ok()) {
        std::fprintf(stderr, "floodgate: %s: %s; nothing was imported\n", file.c_str(), outcome.error.c_str());
        return outcome.storageFailed() ? 4 : 1;
    }
    std::printf("imported %lld entries from %s (%lld replaced existing ones); a running Floodgate on %s applies them within 2 s\n",
                (long long)outcome.value.find("imported")->asInteger(), file.c_str(),
                (long long)outcome.value.find("replaced")->asInteger(), store->path().c_str());
    return 0;
}

} // namespace

int runCommand(const Options& o)
{
    const auto& c = o.command;
    if (c[0] == "replay")
        return runReplay(o);
    if (c[0] == "token") {
        const Core::SystemClock clock;
        auto store = openStore(o, clock);
        if (!store)
            return 4;
        std::printf("%s\n", store->adminToken().c_str());
        return 0;
    }
    return c[1] == "export" ? exportLists(o, c[2]) : importLists(o, c[2]);
}

} // namespace Floodgate::App
