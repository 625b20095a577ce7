// SPDX-License-Identifier: GPL-3.0-or-later
// Files that hold secrets or visitors' data: the database (the admin token)
// and limiter.log (client addresses). They are created readable by their
// owner only whatever the umask, in folders only the owner can enter; an
// existing one that others may read is tightened. What a file others may
// *write* means is the caller's decision (the database refuses it).
#pragma once

#include <optional>
#include <string>

namespace Floodgate::Files {

inline constexpr unsigned OwnerOnlyFile = 0600;
inline constexpr unsigned OwnerOnlyFolder = 0700;

// Creates `dir` and every missing parent, each with mode 0700; folders that
// exist are left as they are. False with a reason.
bool createPrivateFolders(const std::string& dir, std::string* error);

// Creates `path` empty with mode 0600. An existing file is left alone (and
// is not an error). False with a reason.
bool createPrivateFile(const std::string& path, std::string* error);

// Opens `path` for appending, creating it with mode 0600 when missing
// (`*created` says which). A descriptor, or -1 with a reason.
int openPrivateAppend(const std::string& path, bool* created, std::string* error);

// The permission bits of an existing file (0644...); nullopt when missing.
std::optional<unsigned> permissionsOf(const std::string& path);
bool writableByOthers(unsigned mode);  // group or others may write
std::string modeText(unsigned mode);   // "0644"

// Takes every group and other permission away from an existing file and
// says so on stderr in one line ("... was readable by group or others (mode
// 0644); it is now 0600"), or that it could not. Quiet when there was nothing
// to take or the file is missing.
void tighten(const std::string& path);

} // namespace Floodgate::Files
