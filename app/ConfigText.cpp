// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/ConfigText.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Floodgate::App {

namespace {

// What a path is when it is not a regular file.
const char* kindOf(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    return "of an unknown kind";
}

std::string tooLarge(unsigned long long bytes)
{
    return std::to_string(bytes) + " bytes, over the " + std::to_string(MaxConfigFileBytes / (1024 * 1024))
         + " MiB a configuration file may hold";
}

bool isControl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

void appendEscaped(std::string& out, std::string_view text)
{
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (isControl(c)) {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        } else {
            out += ch;
        }
    }
}

} // namespace

std::optional<std::string> readConfigFile(const std::string& path, std::string* text, int* error)
{
    int unused = 0;
    if (!error)
        error = &unused;
    *error = 0;
    // O_NONBLOCK: opening a FIFO for reading waits for a writer without it
    // (forever, with the signals of the thread that opened it unanswered).
    // For a regular file it changes nothing.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        *error = errno;
        if (*error == ENOENT)
            return "no such file";
        // A socket cannot be opened at all (ENXIO): say what it is.
        if (struct stat st {}; ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
            return std::string("not a regular file (") + kindOf(st.st_mode) + ")";
        return std::strerror(*error);
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        *error = errno;
        return std::strerror(*error);
    }
    if (!S_ISREG(st.st_mode))
        return std::string("not a regular file (") + kindOf(st.st_mode) + ")";
    if (std::size_t(st.st_size) > MaxConfigFileBytes)
        return tooLarge((unsigned long long)st.st_size);
    // Read to the end, but never past the bound: the file may grow while
    // it is read.
    text->clear();
    text->reserve(std::size_t(st.st_size));
    char chunk[64 * 1024];
    for (;;) {
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            *error = errno;
            text->clear();
            return std::strerror(*error);
        }
        if (n == 0)
            break;
        if (text->size() + std::size_t(n) > MaxConfigFileBytes) {
            text->clear();
            text->shrink_to_fit();
            return "grew past the " + std::to_string(MaxConfigFileBytes / (1024 * 1024)) + " MiB a configuration file may hold while it was read";
        }
        text->append(chunk, std::size_t(n));
    }
    return std::nullopt;
}

std::string shownValue(std::string_view value, bool quote)
{
    std::string out;
    if (quote)
        out += '"';
    std::string_view head = value;
    const bool cut = value.size() > ShownValueBytes;
    if (cut) {
        std::size_t end = ShownValueBytes;
        // Not in the middle of a UTF-8 character: back to its first byte.
        while (end > 0 && (static_cast<unsigned char>(value[end]) & 0xC0) == 0x80)
            --end;
        head = value.substr(0, end);
    }
    appendEscaped(out, head);
    if (cut)
        out += "\u2026";
    if (quote)
        out += '"';
    if (cut)
        out += " (" + std::to_string(value.size()) + " bytes)";
    return out;
}

std::string printable(std::string_view line)
{
    std::string out;
    out.reserve(line.size());
    appendEscaped(out, line);
    return out;
}

} // namespace Floodgate::App
