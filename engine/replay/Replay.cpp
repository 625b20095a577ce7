// SPDX-License-Identifier: GPL-3.0-or-later
#include "replay/Replay.h"

#include "core/Engine.h"
#include "core/Hash.h"
#include "core/Target.h"
#include "http/Explain.h"
#include "http/LimiterLog.h"
#include "http/RequestHead.h"
#include "replay/LogReader.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace Floodgate::Replay {

std::uint64_t RunResult::requests() const
{
    std::uint64_t n = 0;
    for (auto v : byAction)
        n += v;
    return n;
}

std::uint64_t RunResult::refusals() const
{
    return byAction[std::size_t(Core::Action::Throttle)] + byAction[std::size_t(Core::Action::Block)];
}

namespace {

// Lines held for reordering: one second's lines, their text in one string.
struct Held {
    Core::Millis time = 0;
    bool wholeSecond = true;
    LineRef where;
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
};

struct Bucket {
    std::string text;
    std::vector<Held> lines;
};

struct ClientStat {
    std::uint64_t requests = 0;
    std::uint64_t refusals = 0;
    std::int64_t refused = -1;  // index into Run::refused once refused
};

// Clients by counting key: open addressing in one array (linear probing,
// at most half full), because a node per client costs a cache miss per
// line and this lookup runs for every line of every configuration.
class ClientTable {
public:
    struct Slot {
        Core::IpAddress key;
        bool used = false;
        ClientStat stat;
    };

    std::size_t size() const { return m_size; }

    // The client's stats; null when it is new and `mayAdd` is false.
    ClientStat* find(const Core::IpAddress& key, bool mayAdd)
    {
        if (m_slots.empty())
            m_slots.resize(1024);
        std::size_t i = std::size_t(Core::hashAddress(key)) & (m_slots.size() - 1);
        for (;; i = (i + 1) & (m_slots.size() - 1)) {
            Slot& s = m_slots[i];
            if (s.used && s.key == key)
                return &s.stat;
            if (!s.used)
                break;
        }
        if (!mayAdd)
            return nullptr;
        if ((m_size + 1) * 2 > m_slots.size()) {
            grow();
            return find(key, true);
        }
        Slot& s = m_slots[i];
        s.used = true;
        s.key = key;
        ++m_size;
        return &s.stat;
    }

    template <class Fn>
    void forEach(Fn&& fn) const
    {
        for (const Slot& s : m_slots)
            if (s.used)
                fn(s.key, s.stat);
    }

private:
    void grow()
    {
        std::vector<Slot> old = std::move(m_slots);
        m_slots.assign(old.size() * 2, Slot{});
        m_size = 0;
        for (const Slot& s : old)
            if (s.used)
                *find(s.key, true) = s.stat;
    }

    std::vector<Slot> m_slots;
    std::size_t m_size = 0;
};

struct Run {
    std::unique_ptr<Core::Engine> engine;
    Http::TrustedProxies proxies;
    Core::Settings settings;
    ClientTable clients;
    std::vector<RefusedClient> refused;
    std::size_t capacity = 0;
    Core::Millis nextPurge = 0;
    RunResult out;
};

class Runner {
public:
    Runner(const Input& input, Result& result) : m_input(input), m_result(result) {}

    bool configure(const std::vector<Configuration>& configurations)
    {
        for (const Configuration& c : configurations) {
            if (auto why = Core::validate(c.config)) {
                m_result.fatal = c.name + ": " + *why;
                return false;
            }
            auto run = std::make_unique<Run>();
            try {
                run->engine = std::make_unique<Core::Engine>(c.config);
            } catch (const std::exception& e) {
                m_result.fatal = c.name + ": " + e.what();
                return false;
            }
            run->engine->setList(Core::ListKind::Safelist, std::make_shared<const Core::AddressList>(c.safelist));
            run->engine->setList(Core::ListKind::Blocklist, std::make_shared<const Core::AddressList>(c.blocklist));
            // The listener's rule: the stored trusted proxies plus the command line's.
            std::vector<Core::Cidr> proxies = c.config.settings.trustedProxies;
            proxies.insert(proxies.end(), m_input.trustedProxies.begin(), m_input.trustedProxies.end());
            run->proxies = Http::TrustedProxies(std::move(proxies), Http::DefaultRealIpHeader);
            run->settings = c.config.settings;
            run->capacity = std::max<std::size_t>(c.config.settings.maxTrackedKeys, 1);
            run->out.name = c.name;
            m_runs.push_back(std::move(run));
        }
        return true;
    }

    void readAll()
    {
        for (const std::string& path : m_input.files) {
            LogReader probe;
            std::string why;
            if (!probe.open(path, &why)) {
                m_result.fatal = path + ": cannot read: " + why;
                return;
            }
            m_bytesTotal += probe.sizeOnDisk();
        }
        for (std::size_t i = 0; i < m_input.files.size() && !m_result.cancelled; ++i)
            readFile(i);
        flushAll();
        finish();
    }

private:
    void readFile(std::size_t index)
    {
        m_result.files.emplace_back();
        FileSummary& file = m_result.files.back();
        file.path = m_input.files[index];
        LogReader reader;
        std::string why;
        if (!reader.open(file.path, &why)) {
            file.error = "cannot read: " + why;
            return;
        }
        file.gzip = reader.gzip();
        LogFormat format = m_input.format;
        // Auto: the first lines tell (kept, then replayed like the rest).
        std::vector<std::pair<std::string, bool>> first;  // the line, and whether it was too long
        LogReader::Next next = LogReader::Next::Line;
        std::string_view line;
        if (format == LogFormat::Auto) {
            std::size_t bytes = 0;
            while (first.size() < 50 && bytes < 1024 * 1024) {
                next = reader.next(line);
                if (next == LogReader::Next::Line) {
                    first.emplace_back(std::string(line), false);
                    bytes += line.size();
                } else if (next == LogReader::Next::TooLong) {
                    first.emplace_back(std::string(), true);
                } else {
                    break;
                }
            }
            std::vector<std::string_view> sample;
            for (const auto& [text, tooLong] : first)
                if (!tooLong && !text.empty())
                    sample.push_back(text);
            if (const auto detected = detectFormat(sample)) {
                format = *detected;
            } else if (!first.empty()) {
                file.lines = first.size();
                file.error = "not a log this reads: none of its first " + std::to_string(first.size())
                           + " lines is combined, common, nginx JSON or limiter.log (give --format to see why each line fails)";
                m_result.lines += first.size();
                m_bytesDone += reader.sizeOnDisk();
                return;
            }
            if (first.empty() && next != LogReader::Next::Error) {
                file.format = LogFormat::Auto;  // empty
                m_bytesDone += reader.sizeOnDisk();
                return;
            }
        }
        file.format = format;
        m_file = index;
        m_format = format;
        std::uint64_t lineNo = 0;
        for (const auto& [text, tooLong] : first) {
            ++lineNo;
            take(file, lineNo, text, tooLong);
        }
        if (next == LogReader::Next::Line || next == LogReader::Next::TooLong || m_input.format != LogFormat::Auto) {
            for (;;) {
                next = reader.next(line);
                if (next == LogReader::Next::End || next == LogReader::Next::Error)
                    break;
                take(file, reader.lineNumber(), line, next == LogReader::Next::TooLong);
                if (m_result.lines % ProgressEveryLines == 0) {
                    report(reader);
                    if (m_input.cancelled && m_input.cancelled()) {
                        m_result.cancelled = true;
                        break;
                    }
                }
            }
        }
        if (next == LogReader::Next::Error)
            file.error = reader.error() + " after line " + std::to_string(reader.lineNumber());
        m_bytesDone += reader.sizeOnDisk();
        report(reader, true);
    }

    void report(const LogReader& reader, bool fileDone = false)
    {
        if (!m_input.progress)
            return;
        Progress p;
        p.lines = m_result.lines;
        p.bytesDone = fileDone ? m_bytesDone : m_bytesDone + reader.bytesRead();
        p.bytesTotal = m_bytesTotal;
        p.file = m_file;
        m_input.progress(p);
    }

    void badLine(FileSummary& file, LineRef where, std::string why)
    {
        ++file.bad;
        ++m_result.badLines;
        if (m_result.firstBad.size() < BadLinesKept)
            m_result.firstBad.push_back({where, std::move(why)});
    }

    // One line read: parsed now for its time (and to say at once when it is
    // not a request), held until its second is decided.
    void take(FileSummary& file, std::uint64_t lineNo, std::string_view line, bool tooLong)
    {
        ++m_result.lines;
        ++file.lines;
        const LineRef where{m_file, lineNo};
        if (tooLong) {
            badLine(file, where, "longer than " + std::to_string(LogReader::MaxLineBytes / 1024) + " KiB (not a text log?)");
            return;
        }
        if (line.empty())
            return;  // a blank line is not an entry
        std::string why;
        const LineKind kind = parseLine(line, m_format, m_request, m_scratch, &why);
        if (kind == LineKind::Header)
            return;
        if (kind == LineKind::Bad) {
            badLine(file, where, std::move(why));
            return;
        }
        const Core::Millis t = m_request.time;
        if ((m_input.from && t < *m_input.from) || (m_input.to && t > *m_input.to)) {
            ++m_result.outsideRange;
            return;
        }
        file.requests += m_request.repeat;
        const std::int64_t second = Core::floorDiv(t, Core::SECOND);
        if (m_emittedAny && (second < m_emittedSecond || (second == m_emittedSecond && !m_secondOpen))) {
            // Behind what was already decided: the engine's clock does not
            // step back, so it is decided at the time reached. (A line of
            // the second decided in part because the window was full is
            // not behind: it goes on with that second, held as usual.)
            ++m_result.late;
            m_result.lateBy = std::max(m_result.lateBy, m_reached - t);
            if (m_result.firstLate.size() < BadLinesKept)
                m_result.firstLate.push_back(where);
            decide(m_request, where, m_reached);
            return;
        }
        Bucket& b = m_window[second];
        // A new bucket takes a spare one's memory. (Its vector is what tells
        // it is new: an empty std::string has a small buffer's capacity.)
        if (b.lines.capacity() == 0 && !m_spare.empty()) {
            b = std::move(m_spare.back());
            m_spare.pop_back();
        }
        b.lines.push_back(Held{t, m_request.wholeSecond, where, std::uint32_t(b.text.size()), std::uint32_t(line.size())});
        b.text.append(line);
        ++m_held;
        while (!m_window.empty() && m_window.begin()->first < second - ReorderSeconds)
            emitOldest();
        while (m_held > ReorderMaxLines)
            emitOldest(true);
    }

    void flushAll()
    {
        while (!m_window.empty())
            emitOldest();
    }

    // The oldest second: its lines spread over it (Replay.h), then decided.
    // `part`: the window is full, and the second may have more lines to
    // come; these take half of what is left of it, and it stays open.
    void emitOldest(bool part = false)
    {
        auto it = m_window.begin();
        const std::int64_t second = it->first;
        Bucket b = std::move(it->second);
        m_window.erase(it);
        m_held -= b.lines.size();
        // Where in the second its lines start: after a part already decided.
        const Core::Millis from = m_emittedAny && m_secondOpen && second == m_emittedSecond ? m_openFromMs : 0;
        const Core::Millis to = part ? from + (Core::SECOND - from) / 2 : Core::SECOND;
        const auto whole = std::size_t(std::count_if(b.lines.begin(), b.lines.end(), [](const Held& h) { return h.wholeSecond; }));
        std::size_t i = 0;
        bool exact = false;
        for (Held& h : b.lines) {
            if (h.wholeSecond)
                h.time = second * Core::SECOND + from + Core::Millis(i++) * (to - from) / Core::Millis(whole);
            else
                exact = true;
        }
        if (exact)
            std::stable_sort(b.lines.begin(), b.lines.end(), [](const Held& x, const Held& y) { return x.time < y.time; });
        for (const Held& h : b.lines) {
            const std::string_view line = std::string_view(b.text).substr(h.offset, h.length);
            m_format = m_result.files[h.where.file].format;
            std::string why;
            parseLine(line, m_format, m_request, m_scratch, &why);  // parsed once already: a request
            decide(m_request, h.where, std::max(h.time, m_reached));
        }
        m_emittedAny = true;
        m_emittedSecond = second;
        m_secondOpen = part;
        m_openFromMs = to;
        m_format = m_result.files.empty() ? m_format : m_result.files.back().format;
        b.text.clear();
        b.lines.clear();
        if (m_spare.size() < 4)
            m_spare.push_back(std::move(b));
    }

    // A limiter.log summary line is its first request `repeat` times, all
    // at the line's time (the log keeps no other times for them).
    void decide(const LogRequest& r, LineRef where, Core::Millis t)
    {
        for (std::uint64_t i = 0; i < r.repeat; ++i)
            if (!decideOnce(r, where, t))
                return;
    }

    // False when the line cannot be decided (said as a bad line).
    bool decideOnce(const LogRequest& r, LineRef where, Core::Millis t)
    {
        m_reached = t;
        // What the server received, as header fields (the ones a log keeps).
        Core::HeaderField fields[5];
        std::size_t n = 0;
        if (!r.userAgent.empty())
            fields[n++] = {"User-Agent", r.userAgent};
        if (!r.referer.empty())
            fields[n++] = {"Referer", r.referer};
        if (!r.cookie.empty())
            fields[n++] = {"Cookie", r.cookie};
        if (!r.forwardedFor.empty())
            fields[n++] = {"X-Forwarded-For", r.forwardedFor};
        // A log keeps no Range header; a 206 (Partial Content) answer says
        // the request had one (a download in parts, a PDF read in chunks).
        if (r.status == 206)
            fields[n++] = {"Range", "bytes=0-"};
        // The server decided on its request line (proxy mode): the log has no X-Original-URI.
        const Http::RequestHead head{r.peer, r.method, r.target, std::span<const Core::HeaderField>(fields, n), false};
        bool counted = false;
        for (auto& runPtr : m_runs) {
            Run& run = *runPtr;
            // limiter.log's address is already the client: no proxy applies twice.
            const Http::TrustedProxies& proxies = r.clientResolved ? m_noProxies : run.proxies;
            if (!Http::describeRequest(head, proxies, m_target, m_identity, nullptr, m_facts)) {
                // The listener answers 400 without deciding.
                FileSummary& file = m_result.files[where.file];
                file.requests -= r.repeat;
                badLine(file, where, std::string("the target is malformed (the listener answers 400 without deciding): ") + m_target.reason);
                return false;
            }
            if (r.cookieCount >= 0)
                m_facts.cookieCount = std::uint32_t(r.cookieCount);
            if (!r.customer.empty())
                m_facts.customerId = r.customer;
            else if (!m_input.customerParam.empty())
                m_facts.customerId = Core::queryParameter(m_facts.query, m_input.customerParam).value_or(std::string_view{});
            if (t >= run.nextPurge) {
                run.engine->purge(t);
                run.nextPurge = t + PurgeEveryMs;
            }
            const Core::Decision d = run.engine->decide(m_facts, t);
            if (!d.refused() && (r.status == 0 || (r.status >= 200 && r.status < 300)))
                run.engine->reportSuccess(m_facts, t);
            account(run, where, t, d);
            if (m_input.onDecision)
                m_input.onDecision(DecisionEvent{std::size_t(&runPtr - m_runs.data()), where, t, &m_facts, &d});
            counted = true;
        }
        if (counted) {
            ++m_result.requests;
            if (!m_result.firstTime)
                m_result.firstTime = t;
            m_result.lastTime = t;
        }
        return true;
    }

    void account(Run& run, LineRef where, Core::Millis t, const Core::Decision& d)
    {
        ++run.out.byAction[std::size_t(d.action)];
        const bool refused = d.refused();
        // A ban the replay's own escalation made refuses as "blocklist" does
        // live; told apart here, as the operator's entries are the same on
        // every side of a comparison and these are not.
        if (refused)
            ++run.out.refusalsByRule[std::string(d.refusalName())];
        const Core::IpAddress key = Core::countingKey(m_facts.client, run.settings.ipv6PrefixBits, run.settings.ipv4PrefixBits);
        ClientStat* found = run.clients.find(key, run.clients.size() < run.capacity);
        if (!found) {
            ++run.out.untrackedRequests;
            if (refused)
                ++run.out.untrackedRefusals;
            return;
        }
        ClientStat& s = *found;
        ++s.requests;
        if (!refused)
            return;
        ++s.refusals;
        if (s.refused >= 0)
            return;
        s.refused = std::int64_t(run.refused.size());
        RefusedClient c;
        c.key = run.engine->countingRange(m_facts.client);
        c.address = c.key.isSingleAddress() ? c.key.address().toString() : c.key.toString();
        c.userAgent = std::string(m_facts.userAgent);
        c.crawler = std::string(knownCrawler(c.userAgent));
        Refusal& f = c.first;
        f.where = where;
        f.time = t;
        f.method = std::string(m_facts.method);
        f.path = std::string(m_facts.path);
        if (!m_facts.query.empty())
            f.path += "?" + std::string(m_facts.query);
        f.action = d.action;
        f.reason = d.reason;
        f.rule = std::string(d.rule.view());
        f.count = d.count;
        f.limit = d.limit;
        f.windowMs = d.windowMs;
        f.retryAfterMs = d.retryAfterMs;
        Http::LogRecord record;
        Http::fillLogRecord(record, d, m_facts, d.customerId.view(), m_identity.chain, t);
        f.why = Http::explain(record);
        run.refused.push_back(std::move(c));
    }

    void finish()
    {
        for (auto& runPtr : m_runs) {
            Run& run = *runPtr;
            run.out.clientsSeen = run.clients.size();
            run.clients.forEach([&](const Core::IpAddress&, const ClientStat& s) {
                if (s.refused < 0)
                    return;
                RefusedClient& c = run.refused[std::size_t(s.refused)];
                c.requests = s.requests;
                c.refusals = s.refusals;
            });
            std::sort(run.refused.begin(), run.refused.end(), [](const RefusedClient& a, const RefusedClient& b) {
                return a.refusals != b.refusals ? a.refusals > b.refusals : a.key < b.key;
            });
            run.out.refused = std::move(run.refused);
            m_result.runs.push_back(std::move(run.out));
        }
    }

    const Input& m_input;
    Result& m_result;
    std::vector<std::unique_ptr<Run>> m_runs;
    Http::TrustedProxies m_noProxies;
    std::map<std::int64_t, Bucket> m_window;
    std::vector<Bucket> m_spare;  // emptied buckets kept for their capacity
    std::size_t m_held = 0;
    bool m_emittedAny = false;
    std::int64_t m_emittedSecond = 0;
    // The second last decided was decided in part (the window was full):
    // its later lines are in order, spread from m_openFromMs (ms into it) on.
    bool m_secondOpen = false;
    Core::Millis m_openFromMs = 0;
    Core::Millis m_reached = 0;
    std::size_t m_file = 0;
    LogFormat m_format = LogFormat::Combined;
    std::uint64_t m_bytesTotal = 0;
    std::uint64_t m_bytesDone = 0;
    LogRequest m_request;
    ParseScratch m_scratch;
    Core::NormalisedTarget m_target;
    Http::ClientIdentity m_identity;
    Core::RequestFacts m_facts;
};

} // namespace

Result replay(const Input& input, const std::vector<Configuration>& configurations)
{
    Result result;
    Runner runner(input, result);
    if (!runner.configure(configurations))
        return result;
    runner.readAll();
    return result;
}

std::vector<Difference> compare(const RunResult& a, const RunResult& b)
{
    std::map<Core::Cidr, Difference> byKey;
    for (const RefusedClient& c : a.refused)
        byKey[c.key].before = &c;
    for (const RefusedClient& c : b.refused)
        byKey[c.key].after = &c;
    std::vector<Difference> out;
    for (const auto& [key, d] : byKey)
        if (!d.before || !d.after || d.before->refusals != d.after->refusals)
            out.push_back(d);
    return out;
}

} // namespace Floodgate::Replay
