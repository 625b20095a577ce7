// SPDX-License-Identifier: GPL-3.0-or-later
#include "replay/LogReader.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Floodgate::Replay {

namespace {
constexpr std::size_t ChunkBytes = 1024 * 1024;
}

struct LogReader::Impl {
    int fd = -1;
    bool gzip = false;
    bool ended = false;      // the input has no more bytes
    bool failed = false;
    std::uint64_t size = 0;
    std::uint64_t consumed = 0;  // bytes of the file read (compressed for gzip)
    std::uint64_t line = 0;
    std::string error;
    std::string path;
    // Decompressed (or plain) bytes waiting to be split: buffer[begin, end).
    std::string buffer;
    std::size_t begin = 0;
    std::size_t end = 0;
    bool skipping = false;  // inside a line that is too long
    // gzip
    z_stream z{};
    bool zInit = false;
    bool zMemberEnded = true;  // at the start or after a member's end: the next bytes may start another member (or be the end)
    std::string in;
    std::size_t inBegin = 0;
    std::size_t inEnd = 0;

    ~Impl()
    {
        if (zInit)
            inflateEnd(&z);
        if (fd >= 0)
            ::close(fd);
    }

    bool fail(std::string why)
    {
        failed = true;
        error = std::move(why);
        return false;
    }

    // Raw file bytes into `dst`; 0 at the end, -1 on error.
    ssize_t readFile(char* dst, std::size_t n)
    {
        for (;;) {
            const ssize_t got = ::read(fd, dst, n);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0)
                fail(std::string("cannot read: ") + std::strerror(errno));
            if (got > 0)
                consumed += std::uint64_t(got);
            return got;
        }
    }

    // Appends more bytes at buffer[end...]; false at the end or on error.
    bool fill()
    {
        if (ended || failed)
            return false;
        if (begin > 0) {
            std::memmove(buffer.data(), buffer.data() + begin, end - begin);
            end -= begin;
            begin = 0;
        }
        if (end == buffer.size())
            return true;  // full: the caller skips part of a long line
        if (!gzip) {
            const ssize_t got = readFile(buffer.data() + end, buffer.size() - end);
            if (got <= 0) {
                ended = true;
                return false;
            }
            end += std::size_t(got);
            return true;
        }
        return inflateSome();
    }

    bool inflateSome()
    {
        for (;;) {
            if (inBegin == inEnd) {
                const ssize_t got = readFile(in.data(), in.size());
                if (got < 0)
                    return false;
                if (got == 0) {
                    ended = true;
                    if (!zMemberEnded)
                        return fail("the gzip data ends early (the file is truncated)");
                    return false;
                }
                inBegin = 0;
                inEnd = std::size_t(got);
            }
            if (zMemberEnded) {
                // A new member starts here, or the file ends with padding zeros (some tools add them).
                if (in[inBegin] == 0) {
                    ++inBegin;
                    continue;
                }
                if (inflateReset(&z) != Z_OK)
                    return fail("cannot start decompressing");
                zMemberEnded = false;
            }
            z.next_in = reinterpret_cast<Bytef*>(in.data() + inBegin);
            z.avail_in = uInt(inEnd - inBegin);
            z.next_out = reinterpret_cast<Bytef*>(buffer.data() + end);
            z.avail_out = uInt(buffer.size() - end);
            const int rc = inflate(&z, Z_NO_FLUSH);
            inBegin = inEnd - z.avail_in;
            const std::size_t produced = (buffer.size() - end) - z.avail_out;
            end += produced;
            if (rc == Z_STREAM_END) {
                zMemberEnded = true;
            } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
                return fail(std::string("the gzip data is corrupt (") + (z.msg ? z.msg : "inflate failed") + ")");
            }
            if (produced > 0)
                return true;
        }
    }
};

LogReader::LogReader() : m(std::make_unique<Impl>()) {}
LogReader::~LogReader() = default;

bool LogReader::open(const std::string& path, std::string* why)
{
    m = std::make_unique<Impl>();
    m->path = path;
    m->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st{};
    if (m->fd < 0 || ::fstat(m->fd, &st) != 0) {
        if (why)
            *why = std::strerror(errno);
        return false;
    }
    if (S_ISDIR(st.st_mode)) {
        if (why)
            *why = "it is a folder";
        return false;
    }
    m->size = std::uint64_t(st.st_size);
    m->buffer.resize(ChunkBytes);
    unsigned char magic[2] = {};
    const ssize_t got = ::pread(m->fd, magic, 2, 0);
    if (got < 0) {
        if (why)
            *why = std::strerror(errno);
        return false;
    }
    m->gzip = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (m->gzip) {
        m->in.resize(ChunkBytes);
        // 15 + 16: gzip headers only.
        if (inflateInit2(&m->z, 15 + 16) != Z_OK) {
            if (why)
                *why = "cannot start decompressing";
            return false;
        }
        m->zInit = true;
    }
    return true;
}

bool LogReader::gzip() const { return m->gzip; }
std::uint64_t LogReader::sizeOnDisk() const { return m->size; }
std::uint64_t LogReader::bytesRead() const { return m->consumed; }
std::uint64_t LogReader::lineNumber() const { return m->line; }
const std::string& LogReader::error() const { return m->error; }

LogReader::Next LogReader::next(std::string_view& line)
{
    Impl& s = *m;
    for (;;) {
        const char* base = s.buffer.data();
        const void* nl = s.begin < s.end ? std::memchr(base + s.begin, '\n', s.end - s.begin) : nullptr;
        if (nl) {
            const std::size_t at = std::size_t(static_cast<const char*>(nl) - base);
            const std::size_t from = s.begin;
            s.begin = at + 1;
            ++s.line;
            if (s.skipping) {
                s.skipping = false;
                return Next::TooLong;
            }
            std::size_t len = at - from;
            if (len > 0 && base[from + len - 1] == '\r')
                --len;
            if (len > MaxLineBytes)
                return Next::TooLong;
            line = std::string_view(base + from, len);
            return Next::Line;
        }
        // No line break in what is buffered.
        if (s.end - s.begin > MaxLineBytes) {
            // Too long: drop what is held, keep reading to the break.
            s.skipping = true;
            s.begin = s.end = 0;
        }
        if (!s.fill()) {
            if (s.failed)
                return Next::Error;
            // The end: a last line without a line break.
            if (s.skipping) {
                s.skipping = false;
                ++s.line;
                return Next::TooLong;
            }
            if (s.begin < s.end) {
                std::size_t len = s.end - s.begin;
                const std::size_t from = s.begin;
                s.begin = s.end;
                ++s.line;
                if (len > 0 && s.buffer[from + len - 1] == '\r')
                    --len;
                line = std::string_view(s.buffer.data() + from, len);
                return Next::Line;
            }
            return Next::End;
        }
    }
}

} // namespace Floodgate::Replay
