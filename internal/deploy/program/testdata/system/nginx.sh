#!/bin/sh
# Runs Debian's nginx in the foreground serving ./static at $1: a port on
# loopback, or what nginx's listen takes (host:port, unix:/path). nginx
# reads its address from a file only, so this writes one. Its files live
# in a directory of their own, removed when nginx ends.
set -eu
listen=$1
case $listen in *[!0-9]*) ;; *) listen=127.0.0.1:$listen ;; esac
static=$(pwd)/static
d=$(mktemp -d)
cat >"$d/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $d/nginx.pid;
error_log stderr;
events { worker_connections 1024; }
http {
    access_log off;
    server {
        listen $listen;
        root $static;
        location = /healthz { return 200 "ok\n"; }
    }
}
CONF
nginx=$(command -v nginx || echo /usr/sbin/nginx)
"$nginx" -p "$d" -c "$d/nginx.conf" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid; rm -rf "$d"; exit 0' TERM INT
status=0
wait $pid || status=$?
rm -rf "$d"
exit $status
