// SPDX-License-Identifier: GPL-3.0-or-later
// floodgate-docs SOURCE_DIR: writes the generated regions of the man page
// and of docs/ (app/DocText.h) into the source tree; the `docs` build
// target runs it. Not installed.
#include "app/DocText.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

int main(int argc, char** argv)
{
    using namespace Floodgate::App;
    if (argc != 2) {
        std::fprintf(stderr, "usage: floodgate-docs SOURCE_DIR\n");
        return 2;
    }
    const std::string root = argv[1];
    std::map<std::string, std::string> files;  // path -> text, in the order first read
    for (const DocRegion& region : docRegions()) {
        auto [it, fresh] = files.try_emplace(region.file);
        if (fresh) {
            std::ifstream in(root + "/" + region.file, std::ios::binary);
            std::ostringstream text;
            text << in.rdbuf();
            if (!in) {
                std::fprintf(stderr, "floodgate-docs: cannot read %s/%s\n", root.c_str(), region.file.c_str());
                return 1;
            }
            it->second = text.str();
        }
        std::string why;
        auto updated = withRegion(it->second, region, &why);
        if (!updated) {
            std::fprintf(stderr, "floodgate-docs: %s\n", why.c_str());
            return 1;
        }
        it->second = std::move(*updated);
    }
    for (const auto& [file, text] : files) {
        const std::string path = root + "/" + file;
        std::ifstream old(path, std::ios::binary);
        std::ostringstream was;
        was << old.rdbuf();
        if (was.str() == text)
            continue;
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << text;
        if (!out) {
            std::fprintf(stderr, "floodgate-docs: cannot write %s\n", path.c_str());
            return 1;
        }
        std::printf("floodgate-docs: wrote %s\n", file.c_str());
    }
    return 0;
}
