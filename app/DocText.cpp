// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/DocText.h"

#include "app/ExitCode.h"
#include "app/OptionTable.h"
#include "app/StartLines.h"

#include <cctype>
#include <sstream>

namespace Floodgate::App {

namespace {

const char* const MAN_PAGE = "resources/man/floodgate.1.scd";
const char* const CLI_MD = "docs/CLI.md";
const char* const INTERFACE_MD = "docs/INTERFACE.md";

// The words of `text`, a *bold* or `code` span of several words kept as
// one (scdoc would not see a span that a line break cuts).
std::vector<std::string> words(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    bool open = false;
    for (std::string word; in >> word;) {
        if (open)
            out.back() += " " + word;
        else
            out.push_back(word);
        for (const char c : word)
            if (c == '*' || c == '`')
                open = !open;
    }
    return out;
}

// The words of `text` on lines of at most `width` columns after `indent`.
std::string wrapped(const std::string& text, const std::string& indent, std::size_t width = 78)
{
    std::string out, line;
    for (const std::string& word : words(text)) {
        if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
            out += indent + line + "\n";
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty())
        out += indent + line + "\n";
    return out;
}

// A list item `text` ("- ..."), its lines after the first under its words.
std::string bulleted(const std::string& text, const std::string& indent)
{
    const std::string out = wrapped(text, indent + "  ");
    return indent + out.substr(indent.size() + 2);
}

// `text` with every `from` written `to`.
std::string replaced(std::string_view text, char from, char to)
{
    std::string out(text);
    for (char& c : out)
        if (c == from)
            c = to;
    return out;
}

// `literal` words of a table's text: bold in the man page.
std::string manMarkup(std::string_view text)
{
    return replaced(text, '`', '*');
}

// A help text on one line, for a table cell.
std::string oneLine(std::string_view text)
{
    return replaced(text, '\n', ' ');
}

// A Markdown table cell: '|' would end it, even inside `code`.
std::string cell(std::string_view text)
{
    std::string out;
    for (const char c : text) {
        if (c == '|')
            out += '\\';
        out += c;
    }
    return out;
}

std::string list(const std::vector<std::string>& items, const char* last = " and ")
{
    std::string text;
    for (std::size_t i = 0; i < items.size(); ++i)
        text += (i == 0 ? "" : i + 1 == items.size() ? last : ", ") + items[i];
    return text;
}

// "ADDR:PORT|off" as scdoc writes it: _ADDR_:_PORT_|*off* (a placeholder
// in italics, a literal word in bold).
std::string manValue(std::string_view value)
{
    std::string out, word;
    auto flush = [&] {
        if (word.empty())
            return;
        bool lower = true;
        for (const char c : word)
            lower = lower && !std::isupper(static_cast<unsigned char>(c));
        out += lower ? "*" + word + "*" : "_" + word + "_";
        word.clear();
    };
    for (const char c : value) {
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-') {
            word += c;
        } else {
            flush();
            out += c;
        }
    }
    flush();
    return out;
}

// ---- the man page ----

std::string manOptions()
{
    std::string out;
    bool first = true;
    for (const OptionRow& row : optionTable()) {
        out += first ? "" : "\n";
        first = false;
        out += (row.name == "help" ? "*-h*, " : "") + std::string("*") + row.option() + "*";
        if (!row.value.empty())
            out += " " + manValue(row.value);
        out += "\n";
        std::string text(row.man);
        if (row.def.kind == OptionDefault::Kind::Value)
            text += " Default *" + defaultText(row) + "*.";
        if (row.scope == OptionScope::Everywhere && row.name != "help")
            text += " Every command takes it too.";
        out += wrapped(text, "\t");
    }
    return out;
}

std::vector<std::string> keysOf(Reload reload, const char* open, const char* close)
{
    std::vector<std::string> keys;
    for (const OptionRow& row : optionTable())
        if (row.inFile && row.reload == reload)
            keys.push_back(open + std::string(row.name) + close);
    return keys;
}

std::vector<std::string> fileKeys(const char* open, const char* close)
{
    std::vector<std::string> keys;
    for (const OptionRow& row : optionTable())
        if (row.inFile)
            keys.push_back(open + std::string(row.name) + close);
    return keys;
}

std::string manSettings()
{
    return wrapped("The settings: " + list(fileKeys("*", "*")) + ". On *SIGHUP*, " + list(keysOf(Reload::Live, "*", "*"))
                       + " apply at once; the others need a restart. Every other option belongs to one run and is refused in the file.",
                   "");
}

std::string manExitStatus()
{
    std::string out;
    for (const ExitCodeRow& row : exitCodeTable()) {
        out += (out.empty() ? "" : "\n") + std::string("*") + std::to_string(exitStatus(row.code)) + "*\n";
        out += wrapped(manMarkup(row.meaning), "\t");
    }
    return out;
}

// ---- docs/CLI.md ----

std::string markdownExitCodes(bool commands)
{
    std::string out = "| code | meaning |\n| --- | --- |\n";
    for (const ExitCodeRow& row : exitCodeTable()) {
        const std::string_view text = commands ? row.commands : row.meaning;
        if (!text.empty())
            out += "| " + std::to_string(exitStatus(row.code)) + " | " + cell(text) + " |\n";
    }
    return out;
}

std::string markdownOptions()
{
    std::string out = "| option | what | default | in the file | on SIGHUP |\n| --- | --- | --- | --- | --- |\n";
    for (const OptionRow& row : optionTable()) {
        std::string option = row.option() + (row.value.empty() ? "" : " " + std::string(row.value));
        if (row.name == "help")
            option = "-h, " + option;
        const std::string def = defaultText(row);
        const char* sighup = row.reload == Reload::Live ? "applied at once" : row.reload == Reload::Restart ? "needs a restart" : "";
        out += "| `" + cell(option) + "` | " + cell(oneLine(row.help)) + (row.scope == OptionScope::Everywhere ? "; every command takes it too" : "")
             + " | " + (def.empty() ? "" : "`" + cell(oneLine(def)) + "`") + " | " + (row.inFile ? "`" + std::string(row.name) + "`" : "")
             + " | " + sighup + " |\n";
    }
    return out;
}

std::string markdownSettings()
{
    std::vector<std::string> others;
    for (const OptionRow& row : optionTable())
        if (!row.inFile)
            others.push_back("`" + std::string(row.name) + "`");
    return bulleted("- **The settings**: " + list(fileKeys("`", "`"), ", ") + " (the options table above). What belongs to one run only ("
                        + list(others, ", ") + ") is refused in the file.",
                    "");
}

std::string markdownSighup()
{
    return bulleted("- Applied at once: " + list(keysOf(Reload::Live, "`", "`"), ", ") + ".", "  ")
         + bulleted("- Need a restart (`systemctl restart floodgate`), and keep their running value until then: "
                        + list(keysOf(Reload::Restart, "`", "`"), ", ") + ".",
                    "  ");
}

// ---- docs/INTERFACE.md ----

StartFacts exampleStartFacts()
{
    StartFacts f;
    f.listenUrl = "http://127.0.0.1:8080";
    f.mode = "decision mode";
    f.adminUrl = "http://127.0.0.1:9090";
    f.database = "/path/to/floodgate.db";
    f.keyless = {"acme", "globex", "hobbyist"};
    f.cluster = "joined the cluster at redis://:***@10.0.0.5:6379 as web-1 (2 nodes counting together, cluster key 3fa9c2e1); ...";
    f.logPath = "/path/to/limiter.log";
    return f;
}

std::string markdownStartLines()
{
    std::string out = "```\n";
    const StartFacts example = exampleStartFacts();
    for (const std::string& line : startLines(example))
        out += line + "\n";
    out += "```\n\n| line | printed |\n| --- | --- |\n";
    for (const StartLine& line : startLineTable()) {
        const std::string text = line.text(example);
        // The line's fixed words: up to the first value (a URL, a path, a quote).
        std::string head;
        std::istringstream in(text);
        for (std::string word; in >> word && word.find_first_of("/\"(") == std::string::npos;)
            head += word + " ";
        out += "| `" + cell(head) + "...` | " + cell(line.when) + " |\n";
    }
    return out;
}

std::string markdownSighupSentence()
{
    return wrapped("Of the settings, " + list(keysOf(Reload::Live, "`", "`")) + " apply at once; the others, changed, are named on "
                       "stderr as needing a restart and keep their running value.",
                   "");
}

// The marker lines of a region in `file`.
std::pair<std::string, std::string> markers(const DocRegion& region)
{
    if (region.file.ends_with(".scd"))
        return {"; generated: " + region.name + " (app/DocText.cpp: run `cmake --build build --target docs`)", "; end generated: " + region.name};
    return {"<!-- generated: " + region.name + " (app/DocText.cpp: run `cmake --build build --target docs`) -->",
            "<!-- end generated: " + region.name + " -->"};
}

// Where the region's text starts and ends in `document` (the line after
// the first marker, the start of the second marker's line).
std::optional<std::pair<std::size_t, std::size_t>> locate(const std::string& document, const DocRegion& region, std::string* why)
{
    const auto [open, close] = markers(region);
    const auto first = document.find(open + "\n");
    const auto second = document.find(close + "\n");
    if (first == std::string::npos || second == std::string::npos || second < first) {
        if (why)
            *why = region.file + ": no lines \"" + open + "\" and \"" + close + "\" around the generated " + region.name;
        return std::nullopt;
    }
    // The closing marker's line may be indented (inside a list): the region ends where that line starts.
    return std::make_pair(first + open.size() + 1, document.rfind('\n', second) + 1);
}

} // namespace

std::vector<DocRegion> docRegions()
{
    return {
        {MAN_PAGE, "options", manOptions()},
        {MAN_PAGE, "settings", manSettings()},
        {MAN_PAGE, "exit-status", manExitStatus()},
        {CLI_MD, "exit-codes", markdownExitCodes(true)},
        {CLI_MD, "options", markdownOptions()},
        {CLI_MD, "settings", markdownSettings()},
        {CLI_MD, "sighup", markdownSighup()},
        {INTERFACE_MD, "start-lines", markdownStartLines()},
        {INTERFACE_MD, "exit-codes", markdownExitCodes(false)},
        {INTERFACE_MD, "sighup", markdownSighupSentence()},
    };
}

std::optional<std::string> regionIn(const std::string& document, const DocRegion& region)
{
    const auto at = locate(document, region, nullptr);
    if (!at)
        return std::nullopt;
    return document.substr(at->first, at->second - at->first);
}

std::optional<std::string> withRegion(const std::string& document, const DocRegion& region, std::string* why)
{
    const auto at = locate(document, region, why);
    if (!at)
        return std::nullopt;
    return document.substr(0, at->first) + region.text + document.substr(at->second);
}

} // namespace Floodgate::App
