// SPDX-License-Identifier: GPL-3.0-or-later
#include "files/PrivateFiles.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace Floodgate::Files {

bool createPrivateFolders(const std::string& dir, std::string* error)
{
    namespace fs = std::filesystem;
    // The missing levels, outermost first: each is made 0700 by mkdir
    // itself (a umask can only take bits away), never chmod-ed after.
    std::vector<fs::path> missing;
    std::error_code ec;
    for (fs::path p = fs::path(dir); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
        missing.push_back(p);
        if (p == p.parent_path())
            break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        if (::mkdir(it->c_str(), OwnerOnlyFolder) != 0 && errno != EEXIST) {
            if (error)
                *error = "cannot create the folder " + it->string() + ": " + std::strerror(errno);
            return false;
        }
    }
    return true;
}

bool createPrivateFile(const std::string& path, std::string* error)
{
    // O_EXCL: never touch a file that is already there (someone else's
    // database, a symlink planted in a shared folder).
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, OwnerOnlyFile);
    if (fd < 0) {
        if (errno == EEXIST)
            return true;
        if (error)
            *error = "cannot create " + path + ": " + std::strerror(errno);
        return false;
    }
    // The umask may have taken bits away, never added any: 0600 or less.
    ::close(fd);
    return true;
}

int openPrivateAppend(const std::string& path, bool* created, std::string* error)
{
    if (created)
        *created = false;
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, OwnerOnlyFile);
    if (fd >= 0) {
        if (created)
            *created = true;
        return fd;
    }
    if (errno == EEXIST)
        fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0 && error)
        *error = "cannot open " + path + ": " + std::strerror(errno);
    return fd;
}

std::optional<unsigned> permissionsOf(const std::string& path)
{
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return std::nullopt;
    return unsigned(st.st_mode & 07777);
}

bool writableByOthers(unsigned mode)
{
    return (mode & (S_IWGRP | S_IWOTH)) != 0;
}

std::string modeText(unsigned mode)
{
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
    return buf;
}

void tighten(const std::string& path)
{
    const auto mode = permissionsOf(path);
    if (!mode || (*mode & 077) == 0)
        return;
    const unsigned owner = *mode & 07700;
    const char* what = writableByOthers(*mode) ? "writable" : "readable";
    if (::chmod(path.c_str(), owner) != 0) {
        std::fprintf(stderr, "floodgate: %s is %s by group or others (mode %s) and cannot be changed (%s): chmod 600 it\n", path.c_str(),
                     what, modeText(*mode).c_str(), std::strerror(errno));
        return;
    }
    std::fprintf(stderr, "floodgate: %s was %s by group or others (mode %s); it is now %s\n", path.c_str(), what, modeText(*mode).c_str(),
                 modeText(owner).c_str());
}

} // namespace Floodgate::Files
