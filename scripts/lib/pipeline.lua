-- SPDX-License-Identifier: GPL-3.0-or-later
-- wrk script for scripts/bench-http (BENCH_HTTP_PIPELINE=N): every write on
-- a connection carries N requests for "/", one after the other (HTTP/1.1
-- pipelining), and wrk writes again once all N answers are in. wrk counts
-- each answer as a request. Its system calls and its share of the loopback's
-- TCP work are then paid once per N requests, so the load generator's core
-- is no longer what limits the rate. Argument: N (default 16).
local batch

function init(args)
  local n = tonumber(args[1]) or 16
  local one = wrk.format("GET", "/")
  batch = string.rep(one, n)
end

function request()
  return batch
end
