// SPDX-License-Identifier: GPL-3.0-or-later
// What a replay found, for a person (text), for a program (JSON) and one
// CSV row per decision (--decisions).
#pragma once

#include "replay/Replay.h"
#include "wire/Json.h"

#include <string>

namespace Floodgate::Replay {

// How many refused clients the text lists (the JSON lists every one).
inline constexpr std::size_t TextClientsShown = 50;

// The report for a person: files, totals, time span, lines that did not
// parse, decisions by action and rule, and the refused clients.
std::string textReport(const Result& result);
Wire::Json jsonReport(const Result& result);

// "file,line,time,client,method,path,action,rule,remaining" and CRLF.
std::string decisionsHeader();
// One row for `event` (file names from `files`, the inputs in order).
void appendDecisionRow(std::string& out, const DecisionEvent& event, const std::vector<std::string>& files);

} // namespace Floodgate::Replay
