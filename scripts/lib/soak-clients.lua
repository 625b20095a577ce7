-- SPDX-License-Identifier: GPL-3.0-or-later
-- wrk script for scripts/soak: every request carries X-Forwarded-For with
-- the next address of a pool (Floodgate trusts 127.0.0.1 as the proxy), so
-- one wrk plays many clients. Arguments: FIRST_OCTET_OFFSET POOL_SIZE;
-- address n of the pool is 10.(offset + n / 65536).(n / 256 % 256).(n % 256).
local offset, pool, n = 0, 1, 0

function init(args)
  offset = tonumber(args[1]) or 0
  pool = tonumber(args[2]) or 1
  n = math.random(0, pool - 1)
end

function request()
  n = (n + 1) % pool
  local ip = string.format("10.%d.%d.%d", offset + math.floor(n / 65536), math.floor(n / 256) % 256, n % 256)
  return wrk.format(nil, "/page?n=" .. n, { ["X-Forwarded-For"] = ip })
end
