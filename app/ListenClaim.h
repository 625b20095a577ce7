// SPDX-License-Identifier: GPL-3.0-or-later
// One Floodgate per listening port. The listener's sockets share their port
// (SO_REUSEPORT: one acceptor per thread), so the kernel would let a second
// Floodgate of the same user bind it too, and the two would split the
// traffic and each count alone. Before it listens, a Floodgate takes a lock
// on a file named after its port in the user's runtime folder
// ($XDG_RUNTIME_DIR/floodgate, or /tmp/floodgate-UID), holds it for its
// life and writes into it who it is; a second one finds the lock taken and
// stops with a line naming the first (exit 3). A port held by another
// program, or by a Floodgate of another user, is refused by the kernel
// itself. Port 0 (a free port the kernel picks) claims nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace Floodgate::App {

class ListenClaim {
public:
    struct Holder {
        std::string listen;  // this process's --listen, "HOST:PORT"
        std::string db;      // its database
        std::string admin;   // its admin API's address, or "off"
    };
    // The claim, or nullptr: with *error empty when there is nothing to
    // claim or no private folder to claim it in (the kernel's refusal is
    // all there is then), otherwise the line saying who holds the port.
    static std::unique_ptr<ListenClaim> claim(std::uint16_t port, const Holder& me, std::string* error);
    // Says who holds it again (the admin API's real port, once it listens).
    void describe(const Holder& me);
    ~ListenClaim();
    ListenClaim(const ListenClaim&) = delete;
    ListenClaim& operator=(const ListenClaim&) = delete;

private:
    explicit ListenClaim(int fd) : m_fd(fd) {}
    int m_fd = -1;
};

} // namespace Floodgate::App
