// SPDX-License-Identifier: MIT
// floodgate: the console (coming), or --headless: engine + listener + admin API.
#include "Commands.h"
#include "Headless.h"
#include "Options.h"

#include <cstdio>

namespace {
constexpr const char* VERSION = "0.2.0";
}

int main(int argc, char** argv)
{
    using namespace Floodgate::App;
    Options options;
    if (auto error = parseOptions(argc, argv, options)) {
        std::fprintf(stderr, "floodgate: %s\n", error->c_str());
        return 2;
    }
    if (options.help) {
        std::fputs(usageText().c_str(), stdout);
        return 0;
    }
    if (options.version) {
        std::printf("floodgate %s\n", VERSION);
        return 0;
    }
    if (!options.command.empty())
        return runCommand(options);
    if (!options.headless) {
        std::fprintf(stderr, "floodgate: the console window is not in this build yet; run with --headless "
                             "(scripts/run does: floodgate --headless --demo)\n");
        return 2;
    }
    return runHeadless(options);
}
