#!/usr/bin/env bash
# What running a program as an exec component adds over the same program
# started by hand: nginx serving a static page (the exec app's test
# system's nginx.sh), driven at the same open-loop rate by `svclab load`
# against the program started here, and by `svclab run` of a spec whose
# one component is that program (experiment.isolation = "none", as
# `svclab load` alone does not isolate). The two alternate ROUNDS times;
# the table gives each p50 (latency from the intended send) and the
# median ratio.
#
#   scripts/bench/exec.sh
#   ROUNDS=5 RATE=500 DURATION=10s scripts/bench/exec.sh
set -euo pipefail

cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
RATE=${RATE:-200}
DURATION=${DURATION:-8s}
WARMUP=${WARMUP:-2s}
SVCLAB=${SVCLAB:-bin/svclab}
sys=$(pwd)/internal/deploy/program/testdata/system

tmp=$(mktemp -d)
nginx_pid=
cleanup() {
	[ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

cat >"$tmp/exec.toml" <<SPEC
[app]
name = "exec"
entry = "static"
[app.components.static]
command = ["./nginx.sh", "{port}"]
dir = "$sys"
protocol = "http"
health = "/healthz"
[load]
rate = $RATE
duration = "$DURATION"
warmup = "$WARMUP"
[load.request]
path = "/index.html"
[experiment]
isolation = "none"
SPEC

p50() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["operations"][0]["latency"]["p50_ms"])' "$1"; }

by_hand() {
	local port
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	(cd "$sys" && exec ./nginx.sh "$port") >"$tmp/nginx.log" 2>&1 &
	nginx_pid=$!
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.05; done
	"$SVCLAB" load -q --rate "$RATE" --duration "$DURATION" --warmup "$WARMUP" -o "$tmp/hand.json" "http://127.0.0.1:$port/index.html" >/dev/null 2>&1
	kill "$nginx_pid"; wait "$nginx_pid" 2>/dev/null || true; nginx_pid=
	p50 "$tmp/hand.json"
}

as_exec() {
	rm -rf "$tmp/results"
	"$SVCLAB" run --no-report --results "$tmp/results" "$tmp/exec.toml" >/dev/null 2>&1
	p50 "$(ls "$tmp"/results/*/runs/*/summary.json)"
}

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nproc) CPUs, rounds=$ROUNDS rate=$RATE duration=$DURATION warmup=$WARMUP"
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %14s %14s %8s\n' round by_hand_p50_ms exec_p50_ms ratio
ratios=()
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then h=$(by_hand); e=$(as_exec); else e=$(as_exec); h=$(by_hand); fi
	ratio=$(python3 -c "print(f'{$e/$h:.3f}')")
	ratios+=("$ratio")
	printf '%-6s %14.3f %14.3f %8s\n' "$r" "$h" "$e" "$ratio"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 -c 'import statistics,sys; print("median ratio (exec / by hand, p50):", statistics.median(map(float, sys.argv[1:])))' "${ratios[@]}"
