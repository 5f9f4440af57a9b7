#!/usr/bin/env bash
# Closed-loop maximum throughput of `svclab load` against wrk, hey, vegeta
# and k6 (the last two at pinned versions, built once in a module of their
# own under ${XDG_CACHE_HOME:-~/.cache}/svclab/tools, scripts/bench/lib/tools.sh),
# all driving the same net/http server in the same run; then an open loop
# at OPEN_RATE req/s, svclab against vegeta, comparing latency percentiles
# and CPU per request. The server is pinned to one core and the generator under
# test to the other (taskset), and the tools take turns in rounds so that
# noise from other work on the machine falls on all of them alike; each
# tool's figure is its median over the rounds.
#
# k6 is heavy on one core, so its CPU per request is reported beside its
# throughput.
#
# Environment: ROUNDS (default 5), SECONDS_PER_RUN (5), CONNS (64),
# OPEN_RATE (2000), VEGETA_VERSION (v12.13.0), K6_VERSION (v1.8.1),
# BENCH_STRICT=1 to exit non-zero when a target is missed.
# Output: one line per run, then a table of medians and ratios.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
TOOLS=$ROOT/bin/tools
ROUNDS=${ROUNDS:-5}
SECS=${SECONDS_PER_RUN:-5}
CONNS=${CONNS:-64}
WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
	if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT

say() { echo "load-vs-peers: $*"; }

# --- peers ---------------------------------------------------------------
mkdir -p "$TOOLS"
if ! command -v wrk >/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		say "installing wrk from Debian"
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk) >/dev/null 2>&1 || say "apt-get install wrk failed"
	else
		say "wrk missing and not root: cannot apt-get install it"
	fi
fi
WRK=$(command -v wrk || true)
if [ ! -x "$TOOLS/hey" ]; then
	say "installing hey"
	GOBIN=$TOOLS go install github.com/rakyll/hey@latest >/dev/null 2>&1 || say "go install hey failed"
fi
HEY=$TOOLS/hey; [ -x "$HEY" ] || HEY=
# shellcheck source=lib/tools.sh
source scripts/bench/lib/tools.sh
VEGETA=$(pinned_tool vegeta github.com/tsenart/vegeta/v12 "${VEGETA_VERSION:-v12.13.0}" github.com/tsenart/vegeta/v12)
[ -n "$VEGETA" ] || say "vegeta is left out of this comparison"
K6=$(pinned_tool k6 go.k6.io/k6 "${K6_VERSION:-v1.8.1}" go.k6.io/k6)
[ -n "$K6" ] || say "k6 is left out of this comparison"
OPEN_RATE=${OPEN_RATE:-2000}

# --- binaries ------------------------------------------------------------
go build -o "$WORK/svclab" ./cmd/svclab
go build -o "$WORK/benchserver" ./internal/load/benchserver

taskset -c 1 "$WORK/benchserver" >"$WORK/addr" 2>&1 &
SERVER_PID=$!
for _ in $(seq 50); do [ -s "$WORK/addr" ] && break; sleep 0.1; done
ADDR=$(head -1 "$WORK/addr")
URL=http://$ADDR/
say "server $URL on core 1; generators on core 0; $CONNS connections, ${SECS}s per run, $ROUNDS rounds"

gen() { taskset -c 0 "$@"; }

run_svclab() {
	gen "$WORK/svclab" load --mode closed --users "$CONNS" -d "${SECS}s" -q -o "$WORK/s.json" "$URL" >/dev/null
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["operations"][0]["rps"])' "$WORK/s.json"
}
run_wrk() { gen "$WRK" -t1 -c"$CONNS" -d"${SECS}s" "$URL" | awk '/Requests\/sec/ {print $2}'; }
run_hey() { gen "$HEY" -z "${SECS}s" -c "$CONNS" "$URL" | awk '/Requests\/sec/ {print $2}'; }
run_k6() {
	cat >"$WORK/k6.js" <<JS
import http from "k6/http";
export default function () { http.get("$URL"); }
JS
	gen "$K6" run -q --no-color --vus "$CONNS" --duration "${SECS}s" --summary-export "$WORK/k6.json" "$WORK/k6.js" >/dev/null 2>&1
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metrics"]["http_reqs"]["rate"])' "$WORK/k6.json"
}
run_vegeta() {
	echo "GET $URL" | gen "$VEGETA" attack -rate=0 -max-workers="$CONNS" -workers="$CONNS" -duration="${SECS}s" |
		gen "$VEGETA" report | awk -F'[ ,]+' '/^Requests/ {print $(NF)}'
}

TOOLS_RUN=(svclab)
[ -n "$WRK" ] && TOOLS_RUN+=(wrk)
[ -n "$HEY" ] && TOOLS_RUN+=(hey)
[ -n "$VEGETA" ] && TOOLS_RUN+=(vegeta)
[ -n "$K6" ] && TOOLS_RUN+=(k6)

# warm the server and the page cache once, unrecorded
run_svclab >/dev/null

for r in $(seq "$ROUNDS"); do
	# rotate the order each round
	n=${#TOOLS_RUN[@]}
	for i in $(seq 0 $((n - 1))); do
		t=${TOOLS_RUN[$(((i + r) % n))]}
		# user+system CPU of the run, children included: a noisy machine
		# moves throughput a lot, CPU per request much less
		TIMEFORMAT='%U %S'
		{ time "run_$t" >"$WORK/v" 2>/dev/null; } 2>"$WORK/cpu" || echo 0 >"$WORK/v"
		v=$(cat "$WORK/v"); read -r u s <"$WORK/cpu"
		echo "$r $t $v $u $s" >>"$WORK/results"
		say "round $r: $t $v rps, cpu ${u}s user ${s}s sys"
	done
done

python3 - "$WORK/results" "${BENCH_STRICT:-0}" <<'EOF'
import statistics, sys
from collections import defaultdict
import os
secs = float(os.environ.get("SECONDS_PER_RUN", "5"))
res = defaultdict(list)
cpu = defaultdict(list)
byround = defaultdict(dict)
for line in open(sys.argv[1]):
    r, t, v, u, s = line.split()
    res[t].append(float(v))
    byround[r][t] = float(v)
    if float(v) > 0:
        cpu[t].append((float(u) + float(s)) * 1e6 / (float(v) * secs))
med = {t: statistics.median(v) for t, v in res.items()}
cpr = {t: statistics.median(v) for t, v in cpu.items()}
# svclab / tool within each round, where both met the same machine load
paired = {t: statistics.median([rd["svclab"] / rd[t] for rd in byround.values() if rd.get(t)]) for t in med}
print()
print(f"{'tool':8} {'median rps':>11} {'min':>9} {'max':>9} {'svclab/tool':>12} {'same-round':>11} {'CPU us/req':>11} {'tool/svclab CPU':>16}")
for t in ["svclab", "wrk", "hey", "vegeta", "k6"]:
    if t not in med:
        continue
    ratio = med["svclab"] / med[t] if med[t] else float("nan")
    eff = cpr.get(t, float("nan")) / cpr.get("svclab", float("nan"))
    print(f"{t:8} {med[t]:11.0f} {min(res[t]):9.0f} {max(res[t]):9.0f} {ratio:12.2f} {paired[t]:11.2f} {cpr.get(t, float('nan')):11.1f} {eff:16.2f}")
print()
print("svclab/tool: ratio of medians; same-round: median over rounds of svclab/tool in that round;")
print("tool/svclab CPU: the tool's CPU per request over svclab's (> 1: svclab is cheaper)")
miss = []
if "wrk" in med and med["svclab"] < 0.7 * med["wrk"]:
    miss.append("svclab < 70% of wrk")
if "hey" in med and med["svclab"] < med["hey"]:
    miss.append("svclab < hey")
print()
print("targets (svclab >= 0.70 x wrk, >= hey):", "MISSED: " + "; ".join(miss) if miss else "met")
if miss and sys.argv[2] == "1":
    sys.exit(1)
EOF

# --- open loop: svclab against vegeta at OPEN_RATE ------------------------
[ -n "$VEGETA" ] || exit 0
open_svclab() {
	gen "$WORK/svclab" load -q --rate "$OPEN_RATE" -d "${SECS}s" -o "$WORK/os.json" "$URL" >/dev/null
	python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["operations"][0]; print(t["latency"]["p50_ms"], t["latency"]["p99_ms"], t["count"])' "$WORK/os.json"
}
open_vegeta() {
	echo "GET $URL" | gen "$VEGETA" attack -rate="$OPEN_RATE" -duration="${SECS}s" | gen "$VEGETA" report -type=json >"$WORK/ov.json"
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); l=r["latencies"]; print(l["50th"]/1e6, l["99th"]/1e6, r["requests"])' "$WORK/ov.json"
}
say "open loop at $OPEN_RATE req/s, $ROUNDS rounds"
: >"$WORK/open"
for r in $(seq "$ROUNDS"); do
	order="svclab vegeta"; [ $((r % 2)) = 0 ] && order="vegeta svclab"
	for t in $order; do
		TIMEFORMAT='%U %S'
		{ time "open_$t" >"$WORK/v" 2>/dev/null; } 2>"$WORK/cpu" || echo "0 0 0" >"$WORK/v"
		read -r p50 p99 n <"$WORK/v"; read -r u s <"$WORK/cpu"
		echo "$r $t $p50 $p99 $n $u $s" >>"$WORK/open"
		say "open round $r: $t p50 ${p50} ms p99 ${p99} ms, $n requests, cpu ${u}s user ${s}s sys"
	done
done
python3 - "$WORK/open" <<'EOF'
import statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]):
    r, t, p50, p99, n, u, s = line.split()
    if float(n) > 0:
        rows[t].append((float(p50), float(p99), (float(u) + float(s)) * 1e6 / float(n)))
med = {t: [statistics.median(x[i] for x in v) for i in range(3)] for t, v in rows.items()}
print()
print(f"{'tool':8} {'p50 ms':>8} {'p99 ms':>8} {'CPU us/req':>11}")
for t in ("svclab", "vegeta"):
    if t in med:
        print(f"{t:8} {med[t][0]:8.3f} {med[t][1]:8.3f} {med[t][2]:11.1f}")
if len(med) == 2:
    a, b = med["svclab"], med["vegeta"]
    print(f"svclab/vegeta: p50 {a[0]/b[0]:.2f}, p99 {a[1]/b[1]:.2f}, CPU per request {a[2]/b[2]:.2f}")
print("svclab's latency runs from the intended send (its lag is in it); vegeta's from the moment a worker starts the request")
EOF
