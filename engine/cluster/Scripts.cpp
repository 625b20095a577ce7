// SPDX-License-Identifier: GPL-3.0-or-later
#include "cluster/Scripts.h"

namespace Floodgate::Cluster::Scripts {

// Each node keeps one field per entry: "written;leaseUntil;lease;S1;S2;..."
// with each level "stamp,lockedUntil,total,n[,k,c]...": its own counts
// (absolute: a report may be repeated, and a Redis that lost its data is
// seeded again by the next one), their total, the number of buckets and
// the buckets that are not zero (k from 1, the oldest). The node writes that
// text and the script stores it as it is: a calm client's levels hold a
// bucket or two, and Lua's number parsing and printing is most of what a
// report costs. Times are Redis's (TIME), so no node's clock matters.
//
// A report (ARGV[4 + i]) is "held,quietMs;H1;H2;...#S1;S2;...": what is
// left of the node's lease, how long the entry's quiet lease lasts (fixed
// per entry by a hash of its key, the same on every node: Tuning.h), each
// level's header "algorithm,limit,period,bucket,stamp,lockedUntil,total,n",
// and the levels as stored.
//
// The lease: the headroom of the entry's tightest level, after every
// node's counts (a bucket or window newer than the report's counted as its
// newest) and every other node's unexpired lease, split 2 * nodes ways
// (nodes: the larger of the reporter's count and the nodes with a field on
// the entry), or what the node still holds of its lease if that is more
// (the grant tops it up; it never adds to it). The sum of counts and leases
// so stays within the limit, and a node admits at most E more than its
// lease (Tuning.h), which gives the bound of docs/CLUSTER.md. A client far below every limit (everything counted and
// leased at most half of it) gets its quiet lease (at most ARGV[4], the
// longest any entry gets), so it reports that rarely; any other the short
// one (ARGV[3]). Every key is kept for its longest window and bucket plus
// ARGV[4], so no node's field goes while its lease runs.
//
// The answer, per entry: "granted,reserved,leaseMs,lapseAt;O1;O2;...". The
// other nodes' unexpired leases come back apart from their counts
// (reserved): room they hold and may be spending unreported, which the
// node's check of the limit must not count on, but which nobody admitted;
// lapseAt is when the first of them ends (0: none). Each level of the
// others' counts is "stamp,lockedUntil,total[,k,c]..." in the reporter's
// buckets.
const std::string_view report = R"lua(
local node = ARGV[1]
local nodes = tonumber(ARGV[2])
local shortMs = tonumber(ARGV[3])
local longMs = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gmatch = string.gmatch
local tonumber = tonumber

local function split(s, sep)
  local out = {}
  for p in gmatch(s, '[^' .. sep .. ']+') do out[#out + 1] = p end
  return out
end
local function numbers(s)
  local out = {}
  for p in gmatch(s, '[^,]+') do out[#out + 1] = tonumber(p) end
  return out
end

local results = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  local head, stored = string.match(ARGV[4 + i], '^([^#]*)#(.*)$')
  local parts = split(head, ';')
  local first = numbers(parts[1])
  local held = first[1]
  local quietMs = first[2]
  if quietMs > longMs then quietMs = longMs end
  local levels = {}
  local keep = 0
  for l = 2, #parts do
    local f = numbers(parts[l])
    levels[#levels + 1] = f
    local k = f[3] + f[4]
    if k > keep then keep = k end
  end
  keep = keep + longMs

  -- The other nodes' counts, aligned to this report's stamps, and their leases.
  local others = {}
  for l = 1, #levels do
    local f = levels[l]
    others[l] = {f[1] == 2 and 0 or f[5], 0, 0, {}}  -- stamp, lockedUntil, total, counts by position
  end
  local leases = 0
  local lapseAt = 0
  local alive = 1  -- the nodes with a field here, this one included
  local fields = redis.call('HGETALL', key)
  for j = 1, #fields, 2 do
    local name = fields[j]
    if name ~= node then
      local v = split(fields[j + 1], ';')
      local written = tonumber(v[1])
      if now - written > keep then
        redis.call('HDEL', key, name)  -- a node gone for longer than any window
      else
        alive = alive + 1
        local until_ = tonumber(v[2])
        if until_ > now then
          leases = leases + tonumber(v[3])
          if lapseAt == 0 or until_ < lapseAt then lapseAt = until_ end
        end
        for l = 1, #levels do
          local f = levels[l]
          local o = others[l]
          local g = v[3 + l] and numbers(v[3 + l]) or nil
          if g and g[3] > 0 then
            if f[1] == 0 then
              -- sliding: their bucket k (from their oldest) lands at my
              -- position n - (myStamp - its stamp)
              local n = f[8]
              local newest = g[1]
              local theirs = g[4]
              local c = o[4]
              for p = 5, #g, 2 do
                local age = f[5] - (newest - (theirs - g[p]))
                -- a bucket newer than this report's (the other node's clock
                -- turned first) counts as this report's newest
                if age < 0 then age = 0 end
                if age < n then
                  local pos = n - age
                  c[pos] = (c[pos] or 0) + g[p + 1]
                  o[3] = o[3] + g[p + 1]
                end
              end
            elseif f[1] == 1 then
              -- the same window, or the next one already started there
              if g[1] >= f[5] then o[3] = o[3] + g[3] end
            else
              -- lockout: a window still open counts; the latest start is kept
              if now - g[1] < f[3] then
                o[3] = o[3] + g[3]
                if g[1] > o[1] then o[1] = g[1] end
              end
            end
          end
          if g and f[1] == 2 and g[2] > o[2] then o[2] = g[2] end
        end
      end
    end
  end

  -- The lease, from the tightest level: its share of the room the others'
  -- counts and leases and this node's counts leave, split 2 * ways, or
  -- what this node still holds if that is more. A renewal tops the lease
  -- up to its share rather than adding a share to what is held: added up,
  -- the leases of a client that renews on every node would fill all the
  -- room, and no client would stay far below its limits for long.
  local target = nil
  local used = {}
  local ways = nodes
  if alive > ways then ways = alive end
  for l = 1, #levels do
    local f = levels[l]
    used[l] = leases + f[7] + others[l][3]
    local room = f[2] - used[l]
    if f[1] == 2 and (f[6] > now or others[l][2] > now) then room = 0 end
    local g = 0
    -- split among the nodes counting, or those seen here if more (a node
    -- that joined before this one's heartbeat saw it)
    if room > 0 then g = math.floor(room / (2 * ways)) end
    if target == nil or g < target then target = g end
  end
  local lease = held
  if target ~= nil and target > lease then lease = target end
  local grant = lease - held
  -- Far below every limit: everything counted and leased, this lease
  -- included, at most half of it (and no lockout running).
  local far = true
  for l = 1, #levels do
    local f = levels[l]
    if (used[l] + lease) * 2 > f[2] or (f[1] == 2 and (f[6] > now or others[l][2] > now)) then far = false end
  end
  local leaseMs = far and quietMs or shortMs

  redis.call('HSET', key, node, now .. ';' .. (now + leaseMs) .. ';' .. lease .. ';' .. stored)
  redis.call('PEXPIRE', key, keep)

  local out = {grant .. ',' .. leases .. ',' .. leaseMs .. ',' .. lapseAt}
  for l = 1, #others do
    local o = others[l]
    local s = o[1] .. ',' .. o[2] .. ',' .. o[3]
    for pos, c in pairs(o[4]) do s = s .. ',' .. pos .. ',' .. c end
    out[#out + 1] = s
  end
  results[i] = table.concat(out, ';')
end
return results
)lua";

const std::string_view sharedChange = R"lua(
if ARGV[2] == 'put' then
  redis.call('HSET', KEYS[1], ARGV[4], ARGV[5])
  if tonumber(ARGV[7]) > 0 then
    redis.call('ZADD', KEYS[4], ARGV[7], ARGV[4])
  else
    redis.call('ZREM', KEYS[4], ARGV[4])
  end
else
  redis.call('HDEL', KEYS[1], ARGV[4])
  redis.call('ZREM', KEYS[4], ARGV[4])
end
redis.call('SET', KEYS[3], '1')
return redis.call('XADD', KEYS[2], 'MAXLEN', '~', '100000', '*', 'node', ARGV[1], 'op', ARGV[2], 'coll', ARGV[3],
                  'key', ARGV[4], 'value', ARGV[5], 'actor', ARGV[6])
)lua";

const std::string_view sharedSeed = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
for i = 1, #ARGV, 4 do
  local at = tonumber(ARGV[i])
  redis.call('HSET', KEYS[at], ARGV[i + 1], ARGV[i + 2])
  if tonumber(ARGV[i + 3]) > 0 then redis.call('ZADD', KEYS[at + 1], ARGV[i + 3], ARGV[i + 1]) end
end
redis.call('SET', KEYS[1], '1')
return 1
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
