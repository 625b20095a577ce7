// SPDX-License-Identifier: GPL-3.0-or-later
#include "cluster/ClusterKey.h"

#include "core/Hash.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Floodgate::Cluster {

namespace {

// Far more than a key line; a file this long is not a key file (and is not
// read whole: a FIFO or a huge file costs nothing).
constexpr std::size_t MAX_FILE_BYTES = 1024;
constexpr std::size_t BASE64_CHARS = 44;  // 32 bytes

std::string why(const std::string& path, const std::string& what)
{
    return "cluster key " + path + ": " + what;
}

} // namespace

std::optional<ClusterKey> ClusterKey::fromBase64(std::string_view text)
{
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' || text.back() == '\t'))
        text.remove_suffix(1);
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.remove_prefix(1);
    if (text.size() != BASE64_CHARS)
        return std::nullopt;
    unsigned char out[48];
    const int n = EVP_DecodeBlock(out, reinterpret_cast<const unsigned char*>(text.data()), int(text.size()));
    // 44 characters decode to 33 bytes with the padding '=' counted as a zero.
    if (n != 33 || text[43] != '=' || text[42] == '=')
        return std::nullopt;
    ClusterKey k;
    std::memcpy(k.m_key.data(), out, Bytes);
    return k;
}

std::optional<ClusterKey> ClusterKey::load(const std::string& path, std::string* error)
{
    // O_NONBLOCK: a FIFO named as the key file must not hang the start.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *error = why(path, std::strerror(errno));
        return std::nullopt;
    }
    struct stat st {};
    std::string text;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        *error = why(path, "not a regular file");
        return std::nullopt;
    }
    if (st.st_mode & S_IROTH) {
        ::close(fd);
        *error = why(path, "readable by every user of this machine (mode " + std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7)
                               + std::to_string(st.st_mode & 7) + "): `chmod o-r " + path + "`");
        return std::nullopt;
    }
    char buf[MAX_FILE_BYTES + 1];
    ssize_t got = 0;
    while (text.size() <= MAX_FILE_BYTES && (got = ::read(fd, buf, sizeof buf)) > 0)
        text.append(buf, std::size_t(got));
    ::close(fd);
    if (got < 0) {
        *error = why(path, std::strerror(errno));
        return std::nullopt;
    }
    auto key = text.size() <= MAX_FILE_BYTES ? fromBase64(text) : std::nullopt;
    if (!key)
        *error = why(path, "not a cluster key (one line of 44 base64 characters, as `floodgate cluster-key FILE` writes)");
    return key;
}

bool ClusterKey::create(const std::string& path, std::string* error)
{
    ClusterKey k;
    if (RAND_bytes(k.m_key.data(), int(Bytes)) != 1) {
        *error = why(path, "the system's random source failed");
        return false;
    }
    unsigned char b64[64];
    const int n = EVP_EncodeBlock(b64, k.m_key.data(), int(Bytes));
    std::string line(reinterpret_cast<const char*>(b64), std::size_t(n));
    line += '\n';
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        *error = why(path, errno == EEXIST ? std::string("exists already (a new key would cut this node off from the others: remove it first)")
                                           : std::string(std::strerror(errno)));
        return false;
    }
    const bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, line.data(), line.size()) == ssize_t(line.size()) && ::fsync(fd) == 0;
    const int saved = errno;
    ::close(fd);
    if (!ok) {
        ::unlink(path.c_str());
        *error = why(path, std::strerror(saved));
    }
    return ok;
}

std::string ClusterKey::tag(std::string_view message) const
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), m_key.data(), int(Bytes), reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
    return Core::toHex(std::span<const std::uint8_t>(mac, 16));
}

Core::SipKey ClusterKey::sipKey() const
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    static constexpr std::string_view PURPOSE = "floodgate: the hash key of customers and header values";
    HMAC(EVP_sha256(), m_key.data(), int(Bytes), reinterpret_cast<const unsigned char*>(PURPOSE.data()), PURPOSE.size(), mac, &len);
    Core::SipKey k;
    for (int i = 7; i >= 0; --i) {
        k.k0 = (k.k0 << 8) | mac[i];
        k.k1 = (k.k1 << 8) | mac[8 + i];
    }
    return k;
}

std::string ClusterKey::check() const
{
    static constexpr std::string_view PURPOSE = "floodgate: the cluster key's check value";
    return tag(PURPOSE);
}

} // namespace Floodgate::Cluster
