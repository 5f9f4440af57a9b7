#!/usr/bin/env bash
# Per-call overhead of svclab's Java and Python hosts against their bare
# frameworks (issue 13: <= 1.10x at p50): the select app's selector served
# by the svclab host and by a bare server of the same framework, one pair
# at a time, called by the same client (svclab load, one closed-loop user,
# back to back) with the same StdSize request (200 ints):
#
#   java-grpc   svclab Java host, grpc    vs  bare grpc-java (BareGrpcSelector)
#   java-http   svclab Java host, http    vs  a hand-written Spring controller (BareRestSelector)
#   python-grpc svclab Python host, grpc  vs  bare grpcio (bare_grpc_selector.py)
#
# Both servers of a pair run together and are warmed alike (a warm-up by
# calls); then ROUNDS rounds each measure the host and the bare server for
# DURATION, alternating which goes first, so that the machine's load falls
# on both alike. The table gives each side's median over the rounds of the
# per-round p50, and the median of the per-round ratios.
#
#   scripts/bench/languages.sh                        # defaults below
#   ROUNDS=9 DURATION=5s PAIRS="java-grpc" scripts/bench/languages.sh
#
# Needs `make build java pyimpl`. Every process it starts is stopped on exit.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5s}
WARMUP_CALLS=${WARMUP_CALLS:-20000}
WARMUP_BOUND=${WARMUP_BOUND:-60s}
PAIRS=${PAIRS:-java-grpc java-http python-grpc}
SVCLAB=${SVCLAB:-bin/svclab}
PY=${PY:-impl/python/.venv/bin/python}
JAR=impl/java/target/svclab-java.jar
JCP="impl/java/target/test-classes:impl/java/target/classes:impl/java/target/lib/*"

for f in "$SVCLAB" "$JAR" "$PY" impl/java/target/test-classes/com/github/svclab/bench/BareGrpcSelector.class; do
	[[ -e "$f" ]] || { echo "languages.sh: $f is missing: run make build java pyimpl" >&2; exit 1; }
done

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 -- "-$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

# StdSize: 200 ints, as app.size = "std".
python3 -c 'import json, random; r = random.Random(1); print(json.dumps({"values": [r.randrange(-2**31, 2**31) for _ in range(200)]}))' >"$work/body.json"

freeport() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start NAME CMD...: runs CMD in its own process group, output to a log.
start() {
	local name=$1
	shift
	setsid "$@" >"$work/$name.log" 2>&1 &
	pids+=($!)
}

# load NAME PROTO ADDR DIR [flags...]: one svclab load of the selector.
load() {
	local proto=$1 addr=$2 dir=$3
	shift 3
	if [[ $proto == grpc ]]; then
		"$SVCLAB" load -q --call svclab.selector.Selector/Select --body @"$work/body.json" --dir "$dir" "$@" "$addr"
	else
		"$SVCLAB" load -q -X POST -H 'Content-Type: application/json' --body @"$work/body.json" --dir "$dir" "$@" \
			"http://$addr/svclab.selector.Selector/Select"
	fi
}

# ready PROTO ADDR NAME: waits up to 120 s for one successful call.
ready() {
	local i
	for i in $(seq 120); do
		if load "$1" "$2" "$work/probe" -u 1 -n 1 -d 2s >/dev/null 2>&1 &&
			python3 -c 'import json,sys; t = json.load(open(sys.argv[1]))["operations"][0]; sys.exit(t["count"] == 0 or t["errors"] > 0)' "$work/probe/summary.json"; then
			return 0
		fi
		sleep 1
	done
	echo "languages.sh: $3 did not answer at $2 within 120 s; its log:" >&2
	tail -20 "$work/$3.log" >&2
	exit 1
}

# cpu PID: the process's user+system CPU time so far, in clock ticks.
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

p50() { python3 -c 'import json,sys; t = json.load(open(sys.argv[1]))["operations"][0]; assert t["errors"] == 0, t; print(t["latency"]["p50_ms"], t["count"])' "$1/summary.json"; }

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nproc) CPUs, rounds=$ROUNDS duration=$DURATION warmup_calls=$WARMUP_CALLS (bound $WARMUP_BOUND), $(java -version 2>&1 | head -1), $("$PY" --version)"
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
results=$work/results.tsv
for pair in $PAIRS; do
	hp=$(freeport)
	bp=$(freeport)
	case $pair in
	java-grpc)
		proto=grpc
		start host java -jar "$JAR" --app select --component selector --transport grpc --listen "127.0.0.1:$hp"
		start bare java -cp "$JCP" com.github.svclab.bench.BareGrpcSelector "127.0.0.1:$bp"
		;;
	java-http)
		proto=http
		start host java -jar "$JAR" --app select --component selector --transport http --listen "127.0.0.1:$hp"
		start bare java -cp "$JCP" com.github.svclab.bench.BareRestSelector "127.0.0.1:$bp"
		;;
	python-grpc)
		proto=grpc
		start host "$PY" -m svclab_impl --app select --component selector --transport grpc --listen "127.0.0.1:$hp"
		start bare "$PY" impl/python/bench/bare_grpc_selector.py "127.0.0.1:$bp"
		;;
	*) echo "languages.sh: unknown pair $pair" >&2; exit 2 ;;
	esac
	hpid=${pids[0]} bpid=${pids[1]}
	ready "$proto" "127.0.0.1:$hp" host
	ready "$proto" "127.0.0.1:$bp" bare
	echo "$pair: warming both up ($WARMUP_CALLS calls each)" >&2
	for side in host bare; do
		port=$hp; [[ $side == bare ]] && port=$bp
		load "$proto" "127.0.0.1:$port" "$work/$pair-$side-warm" -u 1 -d 1s --warmup "$WARMUP_BOUND" --warmup-calls "$WARMUP_CALLS" >/dev/null
	done
	for r in $(seq "$ROUNDS"); do
		order="host bare"
		((r % 2 == 0)) && order="bare host"
		for side in $order; do
			port=$hp pid=$hpid
			[[ $side == bare ]] && port=$bp pid=$bpid
			c0=$(cpu "$pid")
			load "$proto" "127.0.0.1:$port" "$work/$pair-$side-$r" -u 1 -d "$DURATION" >/dev/null
			c1=$(cpu "$pid")
			read -r ms n < <(p50 "$work/$pair-$side-$r")
			# The server's CPU per call, which the machine's load inflates far less than latency.
			us=$(python3 -c 'import os,sys; print(round((int(sys.argv[2]) - int(sys.argv[1])) / os.sysconf("SC_CLK_TCK") / int(sys.argv[3]) * 1e6, 1))' "$c0" "$c1" "$n")
			printf '%s\t%s\t%d\t%s\t%s\t%s\n' "$pair" "$side" "$r" "$ms" "$n" "$us" >>"$results"
			echo "$pair round $r $side: p50 $ms ms over $n calls, server CPU $us us/call" >&2
		done
	done
	# Stop this pair before the next starts: one pair at a time on the CPUs.
	for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 -- "-$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$p" 2>/dev/null || true
	done
	pids=()
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$results" <<'EOF'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1]), delimiter="\t"))
by = {}
for pair, side, r, ms, n, us in rows:
    by.setdefault(pair, {}).setdefault(int(r), {})[side] = (float(ms), int(n), float(us))
print(f"\n{'pair':12} {'host p50 ms':>12} {'bare p50 ms':>12} {'p50 ratio':>10} {'ratios min-max':>16} {'calls/round':>12}  {'verdict (<= 1.10)':18} {'host CPU us/call':>17} {'bare':>8} {'ratio':>6}")
for pair, rounds in by.items():
    host = [v["host"][0] for v in rounds.values()]
    bare = [v["bare"][0] for v in rounds.values()]
    ratios = [v["host"][0] / v["bare"][0] for v in rounds.values()]
    calls = statistics.median(v["host"][1] for v in rounds.values())
    r = statistics.median(ratios)
    print(f"{pair:12} {statistics.median(host):12.3f} {statistics.median(bare):12.3f} {r:10.3f} "
          f"{min(ratios):7.3f}-{max(ratios):<8.3f} {calls:12.0f}  {'met' if r <= 1.10 else 'MISSED':18}", end="")
    hc = statistics.median(v["host"][2] for v in rounds.values())
    bc = statistics.median(v["bare"][2] for v in rounds.values())
    print(f" {hc:17.1f} {bc:8.1f} {hc / bc:6.2f}")
EOF
