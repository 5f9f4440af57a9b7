#!/usr/bin/env bash
# svclab load against the wire (issue 18 item 3). tcpdump captures loopback
# while each generator drives benchserver; internal/load/wirecheck pairs
# every request with its response on the same connection, using the
# kernel's timestamps, and compares the generator's figures with the
# wire's, in the same run:
#   - svclab (open loop, --rate): its per-request samples (samples.parquet).
#     Criteria: counts equal; p50 and p90 within 0.1 ms of the wire; p99
#     within 0.1 ms of the wire plus the send lag p99 svclab reports.
#   - vegeta (open loop, same rate): its per-request results.
#   - wrk (closed loop, CONNS connections): its own percentiles.
# Every process is pinned (server on core 1, generator on core 0, tcpdump
# on core 1), the tools take turns in alternating order, and a capture
# that dropped a packet is reported and not judged.
#
# Environment: ROUNDS (default 3), RATES ("500 3000"), SECONDS_PER_RUN (5),
# CONNS (16, wrk's connections), VEGETA_VERSION (v12.13.0).
# Needs tcpdump (Debian: apt-get install tcpdump) and root or CAP_NET_RAW.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
RATES=${RATES:-500 3000}
SECS=${SECONDS_PER_RUN:-5}
CONNS=${CONNS:-16}
VEGETA_VERSION=${VEGETA_VERSION:-v12.13.0}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
say() { echo "accuracy: $*"; }

if ! command -v tcpdump >/dev/null; then
	say "tcpdump missing (apt-get install tcpdump): skipped"
	exit 0
fi
# shellcheck source=lib/tools.sh
source scripts/bench/lib/tools.sh
VEGETA=$(pinned_tool vegeta github.com/tsenart/vegeta/v12 "$VEGETA_VERSION" github.com/tsenart/vegeta/v12)
WRK=$(command -v wrk || true)
[ -n "$VEGETA" ] || say "vegeta $VEGETA_VERSION could not be built: left out"
[ -n "$WRK" ] || say "wrk missing (apt-get install wrk): left out"

go build -o "$WORK/svclab" ./cmd/svclab
go build -o "$WORK/benchserver" ./internal/load/benchserver
go build -o "$WORK/wirecheck" ./internal/load/wirecheck

taskset -c 1 "$WORK/benchserver" >"$WORK/addr" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -s "$WORK/addr" ] && break; sleep 0.1; done
ADDR=$(head -1 "$WORK/addr")
PORT=${ADDR##*:}
URL=http://$ADDR/
say "server $URL on core 1, generators on core 0, tcpdump on core 1; ${SECS}s per run, $ROUNDS rounds; $(date -u +%Y-%m-%dT%H:%MZ)"
say "load average $(cut -d' ' -f1-3 /proc/loadavg): other work on this machine is noise in every figure"

# capture NAME CMD...: runs CMD pinned to core 0 while tcpdump records the
# server's port; leaves $WORK/NAME.txt (the capture as text) and prints
# the kernel's drop count.
capture() {
	local name=$1; shift
	taskset -c 1 tcpdump -i lo -nn -B 65536 --time-stamp-precision=nano -w "$WORK/$name.pcap" "tcp port $PORT" 2>"$WORK/$name.tcpdump" &
	local tp=$!
	for _ in $(seq 50); do grep -q listening "$WORK/$name.tcpdump" 2>/dev/null && break; sleep 0.1; done
	taskset -c 0 "$@" >/dev/null 2>&1 || true
	# tcpdump, on a busy core, may still be reading its buffer: packets
	# not read when it stops are lost without counting as drops, so give
	# it time (the counts below show any that were).
	sleep 1
	kill -INT "$tp"; wait "$tp" || true
	tcpdump -r "$WORK/$name.pcap" -nn -tt --time-stamp-precision=nano 2>/dev/null >"$WORK/$name.txt"
	sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel.*/\1/p' "$WORK/$name.tcpdump"
}

judge() { # name dropped wirecheck-args...
	local name=$1 dropped=$2; shift 2
	if [ "${dropped:-1}" != 0 ]; then
		say "$name: the capture dropped ${dropped:-an unknown number of} packets: not judged"
		return
	fi
	"$WORK/wirecheck" -capture "$WORK/$name.txt" -port "$PORT" -name "$name" "$@" || say "$name: wirecheck failed"
}

run_svclab() { # rate round
	local name=svclab-$1-$2 d
	d=$(capture "$name" "$WORK/svclab" load -q --rate "$1" -d "${SECS}s" --raw-samples --dir "$WORK/$name" "$URL")
	local lag
	lag=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["generator"]["lag_p99_ms"])' "$WORK/$name/summary.json")
	judge "$name" "$d" -svclab "$WORK/$name/samples.parquet" -lag-p99 "$lag"
}
run_vegeta() {
	local name=vegeta-$1-$2 d
	d=$(capture "$name" sh -c "echo 'GET $URL' | '$VEGETA' attack -rate=$1 -duration=${SECS}s > '$WORK/$name.bin'")
	"$VEGETA" encode --to json "$WORK/$name.bin" >"$WORK/$name.json"
	judge "$name" "$d" -vegeta "$WORK/$name.json"
}
run_wrk() {
	local name=wrk-c$CONNS-$2 d
	d=$(capture "$name" sh -c "'$WRK' -t1 -c$CONNS -d${SECS}s --latency '$URL' > '$WORK/$name.out'")
	judge "$name" "$d" -wrk "$WORK/$name.out"
}

for r in $(seq "$ROUNDS"); do
	for rate in $RATES; do
		tools="svclab"
		[ -n "$VEGETA" ] && tools="$tools vegeta"
		if [ $((r % 2)) = 0 ]; then tools=$(echo "$tools" | tr ' ' '\n' | tac | tr '\n' ' '); fi
		for t in $tools; do "run_$t" "$rate" "$r"; done
	done
	[ -n "$WRK" ] && run_wrk 0 "$r"
done
say "ms; count = requests the tool recorded, wire = request/response pairs on loopback"
