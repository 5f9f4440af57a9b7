#!/usr/bin/env bash
# The open-loop pacer's send lag against the host's floor (issue 18 item 1):
# for each protocol (HTTP/1.1, gRPC) and rate (500, 3,000, 10,000 req/s),
# `svclab load` runs pinned to core 0 against benchserver pinned to core 1.
# Each run calibrates the host timer first (a bare sleep-to-deadline loop on
# the same core, in the same process, just before the load), so the lag and
# its floor are measured in the same sitting. Protocols and rates take
# turns in rounds, so that noise from other work falls on all alike; the
# table gives medians over the rounds of lag p99, p99.9 and max and their
# ratios to the floor's (target: ≤ 1.2).
#
# Environment: ROUNDS (default 3), SECONDS_PER_RUN (5), RATES ("500 3000 10000").
set -euo pipefail

cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_PER_RUN:-5}
RATES=${RATES:-500 3000 10000}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
say() { echo "pacer: $*"; }

go build -o "$WORK/svclab" ./cmd/svclab
go build -o "$WORK/benchserver" ./internal/load/benchserver

# Not in a command substitution: its subshell would keep the pids from
# the cleanup, and the servers would outlive the script.
start_server() { # name, flags...
	local name=$1; shift
	taskset -c 1 "$WORK/benchserver" "$@" >"$WORK/$name.addr" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 50); do [ -s "$WORK/$name.addr" ] && break; sleep 0.1; done
}
start_server http
start_server grpc -grpc
HTTP_ADDR=$(head -1 "$WORK/http.addr")
GRPC_ADDR=$(head -1 "$WORK/grpc.addr")
say "servers on core 1 (http $HTTP_ADDR, grpc $GRPC_ADDR); svclab load on core 0; ${SECS}s per run, $ROUNDS rounds; $(date -u +%Y-%m-%dT%H:%MZ)"
say "load average $(cut -d' ' -f1-3 /proc/loadavg): other work on this machine is noise in every figure"

run() { # proto rate round
	local out=$WORK/$1-$2-$3
	mkdir -p "$out"
	if [ "$1" = http ]; then
		taskset -c 0 "$WORK/svclab" load -q --rate "$2" -d "${SECS}s" --dir "$out" "http://$HTTP_ADDR/" >/dev/null 2>&1 || true
	else
		taskset -c 0 "$WORK/svclab" load -q --rate "$2" -d "${SECS}s" --dir "$out" --call grpc.health.v1.Health/Check --body '{}' "$GRPC_ADDR" >/dev/null 2>&1 || true
	fi
	[ -s "$out/summary.json" ] || say "run $1 $2 round $3 wrote no summary.json"
}

for r in $(seq "$ROUNDS"); do
	for rate in $RATES; do
		# alternate the protocols' order from round to round
		if [ $((r % 2)) = 1 ]; then order="http grpc"; else order="grpc http"; fi
		for p in $order; do run "$p" "$rate" "$r"; done
	done
done

python3 - "$WORK" "$ROUNDS" "$RATES" <<'PY'
import json, statistics, sys
from pathlib import Path
work, rounds, rates = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split()
print(f"{'protocol':8} {'rate':>6}  {'lag p99':>8} {'floor':>7} {'ratio':>6}  {'p99.9':>7} {'floor':>7} {'ratio':>6}  {'max':>7} {'floor':>7} {'ratio':>6}  {'late':>5} {'CPU%':>5} {'rq wait':>8} {'verdict'}")
for p in ("http", "grpc"):
    for rate in rates:
        rows = []
        for r in range(1, rounds + 1):
            f = work / f"{p}-{rate}-{r}" / "summary.json"
            if f.exists():
                g = json.loads(f.read_text()).get("generator") or {}
                if g.get("host_timer"):
                    rows.append(g)
        if not rows:
            print(f"{p:8} {rate:>6}  no data")
            continue
        med = lambda k: statistics.median(x[k] for x in rows)
        fmed = lambda k: statistics.median(x["host_timer"][k] for x in rows)
        ratio = lambda k, fk: statistics.median(x[k] / x["host_timer"][fk] if x["host_timer"][fk] > 0 else float("inf") for x in rows)
        verdicts = ",".join(sorted({x["verdict"] for x in rows}))
        print(f"{p:8} {rate:>6}  {med('lag_p99_ms'):8.3f} {fmed('p99_ms'):7.3f} {ratio('lag_p99_ms','p99_ms'):6.2f}"
              f"  {med('lag_p999_ms'):7.3f} {fmed('p999_ms'):7.3f} {ratio('lag_p999_ms','p999_ms'):6.2f}"
              f"  {med('lag_max_ms'):7.3f} {fmed('max_ms'):7.3f} {ratio('lag_max_ms','max_ms'):6.2f}"
              f"  {med('late_sends'):5.0f} {med('cpu_percent'):5.0f} {med('runqueue_wait_ms'):8.0f} {verdicts}")
print("ms; medians over rounds of each run's figure and of each run's ratio to the floor measured just before it;")
print("rq wait: how long the kernel kept the generator's threads waiting for a CPU (other work on core 0)")
PY
