// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/ListenClaim.h"

#include "core/Printable.h"
#include "files/PrivateFiles.h"

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <string_view>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Floodgate::App {

namespace {

// The user's own folder for the claims: $XDG_RUNTIME_DIR/floodgate, or
// /tmp/floodgate-UID when there is no runtime folder (a service without
// one, a shell without a session). Empty when neither is this user's alone.
std::string claimsFolder()
{
    std::string dir;
    if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && *runtime == '/')
        dir = std::string(runtime) + "/floodgate";
    else
        dir = "/tmp/floodgate-" + std::to_string(::getuid());
    std::string why;
    if (!Files::createPrivateFolders(dir, &why))
        return {};
    // Never a folder someone else made (or a link to one) in a shared /tmp.
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 022) != 0)
        return {};
    return dir;
}

std::string field(std::string_view text, std::string_view name)
{
    const std::string key = std::string(name) + "=";
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        if (text.substr(at, key.size()) == key)
            return std::string(text.substr(at + key.size(), end - at - key.size()));
        at = end + 1;
    }
    return {};
}

} // namespace

std::unique_ptr<ListenClaim> ListenClaim::claim(std::uint16_t port, const Holder& me, std::string* error)
{
    error->clear();
    if (port == 0)
        return nullptr;
    const std::string folder = claimsFolder();
    if (folder.empty())
        return nullptr;
    const std::string path = folder + "/listen-" + std::to_string(port);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return nullptr;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        // Held: who by, as the holder wrote it (it may be writing still: one short wait).
        std::string text;
        for (int tries = 0; tries < 20 && text.find("\nadmin=") == std::string::npos; ++tries) {
            if (tries)
                ::usleep(10'000);
            char buf[4096];
            const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
            text.assign(buf, n > 0 ? std::size_t(n) : 0);
        }
        ::close(fd);
        const std::string pid = field(text, "pid");
        *error = "port " + std::to_string(port) + " is taken by another Floodgate" + (pid.empty() ? std::string() : " (pid " + pid + ")")
                 + " listening on " + Core::printable(field(text, "listen")) + " with the database " + Core::printable(field(text, "db"))
                 + " and its admin API on " + Core::printable(field(text, "admin"))
                 + ": two would each count alone; stop that one, or give this one another --listen";
        return nullptr;
    }
    std::unique_ptr<ListenClaim> held(new ListenClaim(fd));
    held->describe(me);
    return held;
}

void ListenClaim::describe(const Holder& me)
{
    const std::string text = "pid=" + std::to_string(::getpid()) + "\nlisten=" + me.listen + "\ndb=" + me.db + "\nadmin=" + me.admin + "\n";
    // Unwritten, the claim holds all the same: only the holder's name is missing.
    if (::ftruncate(m_fd, 0) == 0)
        (void)!::pwrite(m_fd, text.data(), text.size(), 0);
}

ListenClaim::~ListenClaim()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

} // namespace Floodgate::App
