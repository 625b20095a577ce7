// SPDX-License-Identifier: GPL-3.0-or-later
// The lines headless mode and the console print on stdout once they serve
// (a script finds a port-0 listener in them): one row per line, with when
// it is printed. Runtime::printStartLines() prints them; docs/INTERFACE.md's
// list is made from the same rows (app/DocText.h, checked by
// tests/app/test_docs).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace Floodgate::App {

// What the lines tell, as Runtime knows it once everything started.
struct StartFacts {
    std::string listenUrl;             // "http://127.0.0.1:8080" (the real port)
    std::string mode;                  // "decision mode" | "proxy mode -> http://..."
    std::string adminUrl;              // empty: --admin off
    bool adminBeyondLoopback = false;  // the admin API listens beyond loopback
    std::string database;              // its path
    bool databaseCreated = false;      // made now, with the default rules
    bool demoDatabase = false;         // --demo without --db: the demo's own database
    std::vector<std::string> keyless;  // customers that cannot prove who they are (Core::keylessCustomers)
    std::string cluster;               // the cluster's join line; empty without --redis
    std::string logPath;               // empty: --log off
    bool dryRun = false;
};

struct StartLine {
    std::string_view when;                   // when it is printed and what it may add (docs/INTERFACE.md)
    std::string (*text)(const StartFacts&);  // empty: not printed
};

// In the order they are printed; "limiter log ..." is the last.
std::span<const StartLine> startLineTable();
// The lines for these facts, without their line breaks.
std::vector<std::string> startLines(const StartFacts& facts);

} // namespace Floodgate::App
