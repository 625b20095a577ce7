// SPDX-License-Identifier: GPL-3.0-or-later
#include "cluster/Scripts.h"

namespace Floodgate::Cluster::Scripts {

// Each node keeps one field per entry: "written;leaseUntil;lease;S1;S2;...;=T"
// with each level "stamp,lockedUntil,total,n[,k,c]...": its own counts
// (absolute: a report may be repeated, and a Redis that lost its data is
// seeded again by the next one), their total, the number of buckets and
// the buckets that are not zero (k from 1, the oldest). T, the summary, is
// "total1,total2,...,lockedUntil": each level's total again and the latest
// end of its lockouts, the few numbers the script reads of another node's
// field when a client is far below its limits (a field without it, which a
// node built before the summary writes, is read in full). The node writes
// all of that text and the script stores it as it is: Lua's number parsing
// and printing is most of what a report costs. Times are Redis's (TIME),
// so no node's clock matters.
//
// A report (ARGV[4 + i]) is "QH1;H2;...#S1;S2;...;=T". Q is binary: a byte
// m (the number of levels), then 4 + 2m little-endian doubles, read with one
// struct.unpack: what is left of the node's lease, how long the entry's
// quiet lease lasts (fixed per entry by a hash of its key, the same on every
// node: Tuning.h), its longest level's period plus bucket, the latest end
// of its lockouts, then each level's limit and this node's total. Each H is
// a level's header "algorithm,limit,period,bucket,stamp,lockedUntil,total,n";
// after the '#', the field to store.
//
// The lease: the headroom of the entry's tightest level, after every
// node's counts (a bucket or window newer than the report's counted as its
// newest) and every other node's unexpired lease, split 2 * nodes ways
// (nodes: the larger of the reporter's count and the nodes with a field on
// the entry), or what the node still holds of its lease if that is more
// (the grant tops it up; it never adds to it). The sum of counts and leases
// so stays within the limit, and a node admits at most E more than its
// lease (Tuning.h), which gives the bound of docs/CLUSTER.md. A client far
// below every limit (everything counted and leased at most half of it) gets
// its quiet lease (at most ARGV[4], the longest any entry gets), so it
// reports that rarely; any other the short one (ARGV[3]). Every key is kept
// for its longest window and bucket plus ARGV[4], so no node's field goes
// while its lease runs.
//
// Two ways to the lease. First from the summaries: each level's counts
// taken as this node's total plus every other node's total, whatever window
// their buckets fall in, which is never less than the counts aligned to the
// report's window. When that finds the client far below every limit (and no
// lockout running), the lease it gives (no more than the aligned counts
// would give) is granted without reading a bucket. Otherwise, and for a
// field without a summary, the headers and the other nodes' buckets are
// read and aligned, and the lease comes from the aligned counts.
//
// The answer, per entry: "granted,reserved,leaseMs,lapseAt,now|F|F...". The
// other nodes' unexpired leases come back apart from their counts
// (reserved): room they hold and may be spending unreported, which the
// node's check of the limit must not count on, but which nobody admitted;
// lapseAt is when the first of them ends (0: none); now is Redis's clock.
// Each F is another node's field as stored (the nodes that count, not the
// gone ones): the node aligns their buckets to its report itself
// (Cluster::decodeAck), off Redis's core.
const std::string_view report = R"lua(
local node = ARGV[1]
local nodes = tonumber(ARGV[2])
local shortMs = tonumber(ARGV[3])
local longMs = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nowText = tostring(now)
local byte, find, sub, format, gmatch, match = string.byte, string.find, string.sub, string.format, string.gmatch, string.match
local floor, tonumber, call, concat, unpackStruct = math.floor, tonumber, redis.call, table.concat, struct.unpack
local formats = {}  -- per number of levels: the struct format of the quick numbers

local function numbers(s)
  local out, n = {}, 0
  for p in gmatch(s, '[^,]+') do n = n + 1; out[n] = tonumber(p) end
  return out
end
local function parts(s)
  local out, n = {}, 0
  for p in gmatch(s, '[^;]+') do n = n + 1; out[n] = p end
  return out
end

-- The other nodes' counts of each level in this report's window (their
-- buckets aligned to its stamps), and per level whether a lockout of
-- theirs runs: the exact way, for a client not far below its limits.
local function aligned(heads, live)
  local levels = {}
  for l, h in ipairs(parts(heads)) do levels[l] = numbers(h) end
  local totals, lockedOthers = {}, {}
  for l = 1, #levels do totals[l] = 0; lockedOthers[l] = false end
  for _, v in ipairs(live) do
    local p = parts(v)
    for l = 1, #levels do
      local f = levels[l]
      local g = p[3 + l] and numbers(p[3 + l]) or nil
      if g and g[3] > 0 then
        if f[1] == 0 then
          -- sliding: their bucket k (from their oldest) lands at my
          -- position n - (myStamp - its stamp); a bucket newer than this
          -- report's (the other node's clock turned first) counts as its newest
          local shift = f[5] - g[1] + g[4]
          for q = 5, #g, 2 do
            local age = shift - g[q]
            if age < f[8] then totals[l] = totals[l] + g[q + 1] end
          end
        elseif f[1] == 1 then
          -- the same window, or the next one already started there
          if g[1] >= f[5] then totals[l] = totals[l] + g[3] end
        elseif now - g[1] < f[3] then
          -- lockout: a window still open counts
          totals[l] = totals[l] + g[3]
        end
      end
      if g and f[1] == 2 and g[2] > now then lockedOthers[l] = true end
    end
  end
  return levels, totals, lockedOthers
end

-- The lease, from the tightest level (q: the report's quick numbers, m
-- levels): its share of the room the others' counts and leases and this
-- node's counts (used, per level) leave, split 2 * ways, or what this node
-- still holds if that is more. A renewal tops the lease up to its share
-- rather than adding a share to what is held: added up, the leases of a
-- client that renews on every node would fill all the room, and no client
-- would stay far below its limits for long. Far below every limit:
-- everything counted and leased, this lease included, at most half of it,
-- and no lockout running (blocked, per level).
local function grant(q, m, held, ways, used, blocked)
  local target = 0
  for l = 1, m do
    local room = q[3 + 2 * l] - used[l]
    if blocked and blocked[l] then room = 0 end
    local g = 0
    if room > 0 then g = floor(room / (2 * ways)) end
    if l == 1 or g < target then target = g end
  end
  local lease = held
  if m > 0 and target > lease then lease = target end
  local far = true
  for l = 1, m do
    if (used[l] + lease) * 2 > q[3 + 2 * l] or (blocked and blocked[l]) then far = false end
  end
  return lease, far
end

local function one(i)
  local key = KEYS[i]
  local a = ARGV[4 + i]
  local m = byte(a, 1)
  local fmt = formats[m]
  if not fmt then
    fmt = '<' .. string.rep('d', 4 + 2 * m)
    formats[m] = fmt
  end
  local q = {unpackStruct(fmt, a, 2)}
  local from = q[5 + 2 * m]  -- where the headers begin
  local hash = find(a, '#', from, true)
  local stored = sub(a, hash + 1)
  local held = q[1]
  local quietMs = q[2]
  if quietMs > longMs then quietMs = longMs end
  local keep = q[3] + longMs

  -- The other nodes' fields: their leases, and their totals (an upper
  -- bound of their counts in this report's window).
  local upper = {}
  for l = 1, m do upper[l] = q[4 + 2 * l] end
  local exact = q[4] > now  -- a lockout of this node's runs
  local leases, lapseAt, alive = 0, 0, 1
  local live, out = {}, {}
  local fields = call('HGETALL', key)
  for j = 1, #fields, 2 do
    local name = fields[j]
    if name ~= node then
      local v = fields[j + 1]
      local written, untilText, leaseText, summary = match(v, '^(%d+);(%d+);(%d+);.*;=([^;]*)$')
      if not written then
        written, untilText, leaseText = match(v, '^(%d+);(%d+);(%d+)')
      end
      if now - tonumber(written) > keep then
        call('HDEL', key, name)  -- a node gone for longer than any window
      else
        alive = alive + 1
        live[#live + 1] = v
        local until_ = tonumber(untilText)
        if until_ > now then
          leases = leases + tonumber(leaseText)
          if lapseAt == 0 or until_ < lapseAt then lapseAt = until_ end
        end
        local s = summary and numbers(summary)
        if s and #s == m + 1 and s[m + 1] <= now then
          for l = 1, m do upper[l] = upper[l] + s[l] end
        else
          exact = true  -- no summary, or a lockout of theirs may run
        end
      end
    end
  end

  local ways = nodes
  if alive > ways then ways = alive end
  local lease, far = 0, false
  if not exact then
    for l = 1, m do upper[l] = upper[l] + leases end
    lease, far = grant(q, m, held, ways, upper)
  end
  if not far then
    local levels, totals, lockedOthers = aligned(sub(a, from, hash - 1), live)
    local used, blocked = {}, {}
    for l = 1, m do
      local f = levels[l]
      used[l] = leases + f[7] + totals[l]
      blocked[l] = f[1] == 2 and (f[6] > now or lockedOthers[l])
    end
    lease, far = grant(q, m, held, ways, used, blocked)
  end
  local leaseMs = far and quietMs or shortMs

  call('HSET', key, node, format('%s;%d;%d;', nowText, now + leaseMs, lease) .. stored)
  call('PEXPIRE', key, keep)
  out[1] = format('%d,%d,%d,%d,%s', lease - held, leases, leaseMs, lapseAt, nowText)
  for k = 1, #live do out[k + 1] = live[k] end
  return concat(out, '|')
end

-- A field of the entry's hash that is not a node's counts (something else
-- wrote it into Redis): the exact check, run only when an entry failed, so
-- the common report reads no more than it did.
local function wellFormed(v)
  local p = parts(v)
  if #p < 3 then return false end
  for k = 1, 3 do
    if not match(p[k], '^%d+$') then return false end
  end
  for k = 4, #p do
    local s = p[k]
    if byte(s, 1) == 61 then  -- '=': the summary, last
      if k ~= #p or not match(s, '^=%d+[%d,]*$') then return false end
    elseif not match(s, '^%d+,%d+,%d+,%d+[%d,]*$') or (#numbers(s) - 4) % 2 ~= 0 then
      return false
    end
  end
  return true
end

-- One malformed entry is that entry's problem: its foreign fields go
-- (named in the answer, after the entries), and it is tried again; an
-- entry that still fails gets an empty answer (no lease), nobody else does.
local results, removed = {}, {}
for i = 1, #KEYS do
  local ok, r = pcall(one, i)
  if not ok then
    local fields = call('HGETALL', KEYS[i])
    for j = 1, #fields, 2 do
      if fields[j] ~= node and not wellFormed(fields[j + 1]) then
        call('HDEL', KEYS[i], fields[j])
        removed[#removed + 1] = KEYS[i] .. ' ' .. fields[j]
      end
    end
    ok, r = pcall(one, i)
    if not ok then r = '' end
  end
  results[i] = r
end
for k = 1, #removed do results[#KEYS + k] = removed[k] end
return results
)lua";

const std::string_view sharedPut = R"lua(
local match, sub, tonumber, call = string.match, string.sub, tonumber, redis.call
local function stamp(r)
  local at, n, from = match(r, '^(%d+);(%d+):()')
  if not at then return nil end
  return tonumber(at), sub(r, from, from + tonumber(n) - 1)
end
local out = {}
for i = 1, #ARGV, 7 do
  local h = tonumber(ARGV[i])
  local key, rec, at = ARGV[i + 2], ARGV[i + 3], tonumber(ARGV[i + 5])
  local node = select(2, stamp(rec))
  local cur = call('HGET', KEYS[h], key)
  local take = true
  if cur and cur ~= ARGV[i + 6] then
    local cat, cnode = stamp(cur)
    if cat then
      if at == 0 or cat > at or (cat == at and cnode >= node) then take = false end
    end
  end
  if take then
    call('HSET', KEYS[h], key, rec)
    local score = tonumber(ARGV[i + 4])
    if score > 0 then call('ZADD', KEYS[h + 1], score, key) else call('ZREM', KEYS[h + 1], key) end
    call('XADD', KEYS[1], 'MAXLEN', '~', '100000', '*', 'coll', ARGV[i + 1], 'key', key, 'rec', rec)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
)lua";

// At most 1,000 per collection and call: a backlog goes in a few heartbeats
// without holding Redis up.
const std::string_view sharedPrune = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = 0
for i = 1, #KEYS, 2 do
  local ended = redis.call('ZRANGEBYSCORE', KEYS[i + 1], '-inf', now, 'LIMIT', 0, 1000)
  if #ended > 0 then
    redis.call('HDEL', KEYS[i], unpack(ended))
    redis.call('ZREM', KEYS[i + 1], unpack(ended))
    gone = gone + #ended
  end
end
return gone
)lua";

} // namespace Floodgate::Cluster::Scripts
