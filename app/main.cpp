// SPDX-License-Identifier: GPL-3.0-or-later
// floodgate: the console, or --headless: engine + listener + admin API, or a command.
#include "app/Commands.h"
#include "app/ExitCode.h"
#include "app/ConsoleApp.h"
#include "app/Headless.h"
#include "app/Options.h"
#include "core/Printable.h"
#include "floodgate/Version.h"

#include <cstdio>

int main(int argc, char** argv)
{
    using namespace Floodgate::App;
    Options options;
    if (auto error = parseOptions(argc, argv, options)) {
        std::fprintf(stderr, "floodgate: %s\n", Floodgate::Core::printable(*error).c_str());
        return exitStatus(ExitCode::BadInput);
    }
    if (options.help) {
        std::fputs(options.helpText.c_str(), stdout);
        return exitStatus(ExitCode::Done);
    }
    if (options.version) {
        std::printf("floodgate %s\n", Floodgate::Version);
        return exitStatus(ExitCode::Done);
    }
    if (!options.command.empty())
        return exitStatus(runCommand(options));
    if (options.checkConfig) {
        // Everything parsed and checked (parseOptions and checkOptions): nothing is started.
        for (const std::string& w : optionWarnings(options))
            std::fprintf(stderr, "floodgate: warning: %s\n", w.c_str());
        std::printf("configuration ok: %s\n",
                    options.configFile.empty() ? "the command line (no configuration file)" : (options.configFile + " and the command line").c_str());
        return exitStatus(ExitCode::Done);
    }
    if (!options.headless)
        return exitStatus(runConsole(options, argc, argv));
    return exitStatus(runHeadless(options, argc, argv));
}
