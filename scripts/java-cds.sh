#!/usr/bin/env bash
# java-cds.sh JAR ARCHIVE
# java-cds.sh --config DIR   (writes DIR/config.json, the training host's
#                             config, for scripts/bench/java-start.sh)
#
# Writes ARCHIVE, a dynamic class-data sharing archive (JEP 350) of the
# Java host in JAR: one training start of the host, with an http listener
# and gateway (Spring) and a gRPC control listener (grpc-java), one call
# through the gateway, then SIGTERM. The JVM maps the classes it loaded
# from the archive at the next starts instead of parsing and verifying
# them again: a Java host's start took 2.6-2.9 CPU-s instead of 4.5-4.9
# and was ready in 1.5 s instead of 2.4 on the reference machine
# (docs/PERFORMANCE.md). internal/deploy/langhost uses the archive when
# it is at least as new as the jar.
#
# The archive only speeds the start, so a training that fails says why and
# leaves an empty ARCHIVE, which langhost does not use and make does not
# train again until the jar changes; the build goes on.
set -uo pipefail
# config DIR writes DIR/config.json. Unix sockets: no port to race for.
# The peer is never called: the one call fails at the frontend's first
# step, which still loads the request path's classes.
config() {
  cat >"$1/config.json" <<EOF
{"deployment": "cds", "app": "select", "configJson": "{}", "group": "frontend",
 "components": ["frontend"], "entry": "frontend", "transport": "http",
 "listeners": {"frontend": {"endpoint": {"transport": "http", "network": "unix", "addr": "$1/frontend.sock"}}},
 "gateway": {"endpoint": {"transport": "http", "network": "unix", "addr": "$1/gateway.sock"}},
 "peers": {"selector": {"endpoints": [{"transport": "http", "network": "tcp", "addr": "127.0.0.1:9"}]}},
 "control": {"endpoint": {"transport": "grpc", "network": "unix", "addr": "$1/control.sock"}}}
EOF
}
if [ "${1:-}" = --config ]; then
  config "$2"
  exit 0
fi

# The JVM uses the archive only with the class path it was made with, and
# internal/deploy/langhost names the jar by its absolute path.
jar=$(realpath "$1") archive=$2
rm -f "$archive"
dir=$(mktemp -d "${TMPDIR:-/tmp}/svclab-java-cds.XXXXXX") || exit 0
pid=
cleanup() {
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

config "$dir"
java -XX:ArchiveClassesAtExit="$dir/archive.jsa" -jar "$jar" --config "$dir/config.json" >"$dir/log" 2>&1 &
pid=$!
fail() {
  echo "java: no class-data archive: $1; Java hosts start without it"
  sed 's/^/  /' "$dir/log" | tail -5
  : >"$archive"
  exit 0
}
ready=
for _ in $(seq 1 600); do # 60 s at most
  if grep -q "svclab host ready" "$dir/log"; then ready=1; break; fi
  kill -0 "$pid" 2>/dev/null || fail "the training host exited before it was ready"
  sleep 0.1
done
[ -n "$ready" ] || fail "the training host was not ready within 60 s"
command -v curl >/dev/null && curl -s --max-time 10 --unix-socket "$dir/gateway.sock" -H 'Content-Type: application/json' \
  -d '{}' -o /dev/null http://localhost/svclab.selector.Frontend/Select
kill -TERM "$pid"
for _ in $(seq 1 300); do # 30 s at most: the JVM writes the archive as it exits
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then fail "the training host did not exit within 30 s of SIGTERM"; fi
wait "$pid"
status=$?
pid=
[ "$status" -eq 0 ] || fail "the training host exited with status $status"
[ -s "$dir/archive.jsa" ] || fail "the JVM wrote no archive"
mv "$dir/archive.jsa" "$archive"
