// SPDX-License-Identifier: GPL-3.0-or-later
// What the console shows beside a client's counts: the last path it asked
// for and its user agent. The engine keeps counts, not strings, so the
// listener threads copy a sample of requests into their own bounded rings
// (never waiting; a full ring drops) and the console's snapshot thread
// drains them a few times a second.
#pragma once

#include "core/Decision.h"
#include "http/SpscRing.h"

#include <memory>
#include <vector>

namespace Floodgate::Http {

struct RequestSample {
    Core::IpAddress client;
    Core::Millis time = 0;
    char method[12] = {};
    char path[160] = {};
    char userAgent[160] = {};
};

class RequestSamples {
public:
    explicit RequestSamples(std::size_t producers, std::size_t perProducer = 1024);

    // From listener thread `producer` only.
    void push(std::size_t producer, const Core::RequestFacts& facts, Core::Millis now);
    // From one consumer thread: everything pushed since the last call.
    std::vector<RequestSample> drain();

private:
    std::vector<std::unique_ptr<SpscRing<RequestSample>>> m_rings;
};

} // namespace Floodgate::Http
