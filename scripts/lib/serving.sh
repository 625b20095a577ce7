# SPDX-License-Identifier: GPL-3.0-or-later
# Sourced by scripts/hostile-slow, scripts/soak and scripts/bench-spray: the
# built binary, headless, in proxy mode in front of a one-worker nginx on
# 127.0.0.1 (or in decision mode when no upstream was started), in a scratch
# folder that is removed (and every process stopped) on exit.
# Needs: $root (the repository). Sets: $work, $binary, $up_port, $fg_port,
# $admin_port, $db, $auth (the admin bearer token header), $fg_pid.
# Optional: $serving_cpu, a core to pin Floodgate to (taskset).

binary="${FLOODGATE_BINARY:-${FLOODGATE_BUILD_DIR:-$root/build}/app/floodgate}"
work="$(mktemp -d /tmp/floodgate-hostile.XXXXXX)"
serving_pids=()
serving_stop() {
  for p in "${serving_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${serving_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  serving_pids=()
}
trap 'serving_stop; rm -rf "$work"' EXIT

# A TCP port nobody listens on now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_port() {
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing answers on 127.0.0.1:$1" >&2
  return 1
}

# nginx with one worker: 200 "upstream ok" for everything, and /big.bin
# (1 MiB) for slow readers.
start_upstream() {
  up_port=$(free_port)
  mkdir -p "$work/nginx/tmp" "$work/www"
  head -c 1048576 /dev/zero > "$work/www/big.bin"
  cat > "$work/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
error_log $work/nginx/error.log warn;
pid $work/nginx/nginx.pid;
worker_rlimit_nofile 65536;
events { worker_connections 16384; }
http {
  access_log off;
  client_body_temp_path $work/nginx/tmp/body; proxy_temp_path $work/nginx/tmp/proxy;
  fastcgi_temp_path $work/nginx/tmp/fcgi; uwsgi_temp_path $work/nginx/tmp/uwsgi; scgi_temp_path $work/nginx/tmp/scgi;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$up_port;
    root $work/www;
    location = /big.bin { }
    location / { return 200 "upstream ok\n"; }
  }
}
CONF
  nginx -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" &
  serving_pids+=($!)
  wait_port "$up_port"
}

# The binary, headless: proxy mode in front of start_upstream's nginx, or
# decision mode when start_upstream did not run. Extra arguments are passed on.
# A database already at $work/floodgate.db (prepared by the caller) is used.
start_floodgate() {
  db="$work/floodgate.db"
  local mode=() pin=()
  [ -z "${up_port:-}" ] || mode=(--upstream "http://127.0.0.1:$up_port")
  [ -z "${serving_cpu:-}" ] || pin=(taskset -c "$serving_cpu")
  "${pin[@]}" "$binary" --headless --listen 127.0.0.1:0 --admin 127.0.0.1:0 "${mode[@]}" \
    --db "$db" --log off "$@" >"$work/floodgate.out" 2>"$work/floodgate.err" &
  fg_pid=$!
  serving_pids+=($fg_pid)
  for _ in $(seq 100); do
    grep -q '^limiter log' "$work/floodgate.out" 2>/dev/null && break
    kill -0 "$fg_pid" 2>/dev/null || { cat "$work/floodgate.err" >&2; return 1; }
    sleep 0.1
  done
  fg_port=$(sed -nE 's|^listening on http://127\.0\.0\.1:([0-9]+).*|\1|p' "$work/floodgate.out")
  admin_port=$(sed -nE 's|^admin on http://127\.0\.0\.1:([0-9]+).*|\1|p' "$work/floodgate.out")
  [ -n "$fg_port" ] && [ -n "$admin_port" ] || { echo "floodgate did not start:" >&2; cat "$work/floodgate.out" "$work/floodgate.err" >&2; return 1; }
  auth="Authorization: Bearer $("$binary" token --db "$db")"
}

# Resident set size of a process in KiB, and its peak (the high-water mark).
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
