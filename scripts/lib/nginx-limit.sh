# SPDX-License-Identifier: MIT
# Sourced by scripts/bench-http and scripts/bench-cluster: the nginx they
# compare Floodgate with, one worker, logging off, limit_req in front of
# `return 200` (a bare `return` runs before limit_req: serve through
# try_files + @ok), with a zone that never refuses and one that refuses a
# flood (2/s, burst 6).
# nginx_limit_conf DIR CALM_PORT FLOOD_PORT [HTTP_LINE]: writes DIR/nginx.conf
# (its temp files, log and pid under DIR); HTTP_LINE, if given, is added to
# the http block (bench-cluster takes the client from X-Forwarded-For).
# Start it with: taskset -c 0 nginx -p DIR -c DIR/nginx.conf &
nginx_limit_conf() {
  local dir=$1 calm=$2 flood=$3 extra=${4:-}
  mkdir -p "$dir/tmp"
  {
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
    [ -z "$extra" ] || echo "  $extra"
    cat <<CONF
  limit_req_zone \$binary_remote_addr zone=calm:10m rate=1000000r/s;
  limit_req_zone \$binary_remote_addr zone=flood:10m rate=2r/s;
  limit_req_status 429;
  server { listen 127.0.0.1:$calm; location / { limit_req zone=calm burst=100000 nodelay; try_files /__none__ @ok; } location @ok { return 200 "ok"; } }
  server { listen 127.0.0.1:$flood; location / { limit_req zone=flood burst=6 nodelay; try_files /__none__ @ok; } location @ok { return 200 "ok"; } }
}
CONF
  } >"$dir/nginx.conf"
}
