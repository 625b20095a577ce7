# SPDX-License-Identifier: GPL-3.0-or-later
# Sourced by scripts/bench-http and scripts/bench-cluster: the nginx they
# compare Floodgate with, one worker, logging off, limit_req in front of
# `return 200` (a bare `return` runs before limit_req: serve through
# try_files + @ok), with a zone that never refuses and one that refuses a
# flood (2/s, burst 6). Its rejections are logged at level info, below the
# error log's warn: not written, like Floodgate's --log off.
# nginx_limit_conf DIR CALM_PORT FLOOD_PORT [HTTP_LINE] [LOGGED_FLOOD_PORT]:
# writes DIR/nginx.conf (its temp files, log and pid under DIR); HTTP_LINE,
# if given (may be empty), is added to the http block (bench-cluster takes
# the client from X-Forwarded-For); LOGGED_FLOOD_PORT, if given, serves the
# flood zone with every rejection written to DIR/limit.log (one line each,
# like Floodgate's limiter.log).
# Start it with: taskset -c 0 nginx -p DIR -c DIR/nginx.conf &
# nginx's workers run as nobody: DIR and every directory above it must be
# searchable by others (a mktemp -d directory is 0700: chmod 755 it), or each
# try_files stat fails with EACCES and nginx logs a [crit] line per request,
# work the comparison does not mean it to do. nginx_quiet checks afterwards.
nginx_limit_conf() {
  local dir=$1 calm=$2 flood=$3 extra=${4:-} logged=${5:-}
  mkdir -p "$dir/tmp"
  {
    nginx_conf_head "$dir"
    [ -z "$extra" ] || echo "  $extra"
    cat <<CONF
  limit_req_zone \$binary_remote_addr zone=calm:10m rate=1000000r/s;
  limit_req_zone \$binary_remote_addr zone=flood:10m rate=2r/s;
  limit_req_status 429;
  limit_req_log_level info;
  server { listen 127.0.0.1:$calm; location / { limit_req zone=calm burst=100000 nodelay; try_files /__none__ @ok; } location @ok { return 200 "ok"; } }
  server { listen 127.0.0.1:$flood; location / { limit_req zone=flood burst=6 nodelay; try_files /__none__ @ok; } location @ok { return 200 "ok"; } }
CONF
    [ -z "$logged" ] || cat <<CONF
  server { listen 127.0.0.1:$logged; error_log $dir/limit.log warn; limit_req_log_level warn;
           location / { limit_req zone=flood burst=6 nodelay; try_files /__none__ @ok; } location @ok { return 200 "ok"; } }
CONF
    echo "}"
  } >"$dir/nginx.conf"
}

# nginx_upstream_conf DIR PORT: the upstream both proxies forward to, one
# worker answering `return 200 "ok"` on keep-alive connections that last.
nginx_upstream_conf() {
  local dir=$1 port=$2
  mkdir -p "$dir/tmp"
  {
    nginx_conf_head "$dir"
    cat <<CONF
  keepalive_requests 100000000; keepalive_timeout 300s;
  server { listen 127.0.0.1:$port; location / { return 200 "ok"; } }
}
CONF
  } >"$dir/nginx.conf"
}

# nginx_proxy_conf DIR PORT UPSTREAM_PORT: nginx as a reverse proxy with
# limit_req in front (the calm zone: every request counted and allowed) and
# a keep-alive pool to UPSTREAM_PORT. It sends the upstream the head
# Floodgate's proxy mode sends (engine/http/ForwardHead.cpp), so both sides
# compose the same forwarding headers and the shared upstream parses the
# same bytes: the client's Host, X-Forwarded-For (the peer: no proxy is
# trusted here), X-Forwarded-Proto, X-Forwarded-Host, X-Real-IP and
# Forwarded (Floodgate quotes the host only when it is not a token; a
# host:port never is), and no Connection header. nginx's defaults (Host
# $proxy_host, nothing about the client) would leave the upstream five
# headers less to parse behind nginx than behind Floodgate.
nginx_proxy_conf() {
  local dir=$1 port=$2 up=$3
  mkdir -p "$dir/tmp"
  {
    nginx_conf_head "$dir"
    cat <<CONF
  limit_req_zone \$binary_remote_addr zone=calm:10m rate=1000000r/s;
  limit_req_status 429;
  limit_req_log_level info;
  upstream origin { server 127.0.0.1:$up; keepalive 64; keepalive_requests 100000000; }
  server { listen 127.0.0.1:$port;
           location / { limit_req zone=calm burst=100000 nodelay; proxy_pass http://origin; proxy_http_version 1.1;
                        proxy_set_header Host \$http_host; proxy_set_header X-Forwarded-For \$remote_addr;
                        proxy_set_header X-Forwarded-Proto \$scheme; proxy_set_header X-Forwarded-Host \$http_host;
                        proxy_set_header X-Real-IP \$remote_addr;
                        proxy_set_header Forwarded "for=\$remote_addr;host=\\"\$http_host\\";proto=\$scheme";
                        proxy_set_header Connection ""; } }
}
CONF
  } >"$dir/nginx.conf"
}

# nginx_conf_head DIR: what every configuration here starts with (one
# worker in the foreground, no access log, its files under DIR), up to
# inside the http block.
nginx_conf_head() {
  local dir=$1
  cat <<CONF
worker_processes 1;
daemon off;
error_log $dir/error.log warn;
pid $dir/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/tmp/body; proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fcgi; uwsgi_temp_path $dir/tmp/uwsgi; scgi_temp_path $dir/tmp/scgi;
CONF
}

# nginx_quiet DIR...: fails, showing the first line, when nginx wrote
# anything to DIR/error.log (the configurations above log nothing in normal
# operation; a line per request would be work Floodgate's side does not do).
nginx_quiet() {
  local dir
  for dir in "$@"; do
    if [ -s "$dir/error.log" ]; then
      echo "nginx wrote $(wc -l <"$dir/error.log") lines to $dir/error.log, the comparison is not like for like:" >&2
      head -1 "$dir/error.log" >&2
      return 1
    fi
  done
}
