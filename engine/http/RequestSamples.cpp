// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/RequestSamples.h"

namespace Floodgate::Http {

RequestSamples::RequestSamples(std::size_t producers, std::size_t perProducer)
{
    for (std::size_t i = 0; i < std::max<std::size_t>(1, producers); ++i)
        m_rings.push_back(std::make_unique<SpscRing<RequestSample>>(perProducer));
}

void RequestSamples::push(std::size_t producer, const Core::RequestFacts& f, Core::Millis now)
{
    SpscRing<RequestSample>& ring = *m_rings[producer % m_rings.size()];
    RequestSample* s = ring.reserve();
    if (!s)
        return;
    s->client = f.client;
    s->time = now;
    copyTruncated(s->method, sizeof s->method, f.method);
    copyTruncated(s->path, sizeof s->path, f.path);
    copyTruncated(s->userAgent, sizeof s->userAgent, f.userAgent);
    ring.commit();
}

std::vector<RequestSample> RequestSamples::drain()
{
    std::vector<RequestSample> out;
    for (auto& ring : m_rings)
        ring->drain([&](const RequestSample& s) { out.push_back(s); });
    return out;
}

} // namespace Floodgate::Http
