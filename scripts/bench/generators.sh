#!/usr/bin/env bash
# The highest open-loop rate of one generator against two
# (`svclab load --generators 2`), with the same target: one net/http
# server (internal/load/benchserver) pinned to the last CPU, the
# generator process(es) to the others (taskset; generators started by
# svclab inherit it). Rates climb a ladder; at each rate the two set-ups
# take turns, ROUNDS times. A rate is sustained when the answers that came
# within the window reach 99 % of the offered rate and no arrival was
# dropped; the table gives, per rate and set-up, the median completed rate,
# the median share of late sends (> 1 ms behind schedule) and how many
# rounds sustained it, then the highest rate each set-up sustained in
# every round.
#
# Environment: RATES (default "2000 4000 8000 12000 16000 24000 32000"),
# ROUNDS (2), SECONDS_PER_RUN (5).
set -euo pipefail

cd "$(dirname "$0")/../.."
RATES=${RATES:-2000 4000 8000 12000 16000 24000 32000}
ROUNDS=${ROUNDS:-2}
SECS=${SECONDS_PER_RUN:-5}
WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
	if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT
say() { echo "generators: $*"; }

go build -o "$WORK/svclab" ./cmd/svclab
go build -o "$WORK/benchserver" ./internal/load/benchserver
NCPU=$(nproc)
SRV_CPU=$((NCPU - 1))
GEN_CPUS=0
[ "$NCPU" -gt 2 ] && GEN_CPUS="0-$((NCPU - 2))"
# benchserver prints its address on stderr (println)
taskset -c "$SRV_CPU" "$WORK/benchserver" >"$WORK/addr" 2>&1 &
SERVER_PID=$!
for _ in $(seq 50); do [ -s "$WORK/addr" ] && break; sleep 0.1; done
ADDR=$(head -1 "$WORK/addr")
[ -n "$ADDR" ] || { say "the server did not start"; exit 1; }
say "server $ADDR on CPU $SRV_CPU, generators on CPU $GEN_CPUS; $(uptime | sed 's/.*load/load/')"

echo "rate gens round completed_rps late_pct dropped" >"$WORK/runs"
for round in $(seq "$ROUNDS"); do
	for rate in $RATES; do
		order="1 2"; [ $((round % 2)) = 0 ] && order="2 1"
		for g in $order; do
			out=$WORK/r-$rate-$g-$round
			taskset -c "$GEN_CPUS" "$WORK/svclab" load -q --rate "$rate" -d "${SECS}s" --generators "$g" \
				--dir "$out" "http://$ADDR/" >/dev/null 2>"$out.err" || true
			if [ -f "$out/summary.json" ]; then
				line=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
t = s["operations"][0]; g = s["generator"]
late = 100 * g["late_sends"] / max(g["sends"], 1)
print("%.0f %.2f %d" % (t["completed_rps"], late, g["dropped"]))' "$out/summary.json")
			else
				line="0 100 -1"
			fi
			echo "$rate $g $round $line" >>"$WORK/runs"
			say "rate $rate, $g generator(s), round $round: completed/s late% dropped = $line"
		done
	done
done

python3 - "$WORK/runs" <<'EOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
by = {}
for rate, g, rnd, comp, late, drop in rows:
    by.setdefault((int(rate), int(g)), []).append((float(comp), float(late), int(drop)))
print("\n| offered rps | generators | completed rps (median) | late sends % (median) | rounds sustained |")
print("|---|---|---|---|---|")
best = {1: 0, 2: 0}
for (rate, g), rs in sorted(by.items()):
    ok = sum(1 for c, l, d in rs if c >= 0.99 * rate and d == 0)
    if ok == len(rs):
        best[g] = max(best[g], rate)
    print(f"| {rate} | {g} | {st.median(c for c, _, _ in rs):.0f} | {st.median(l for _, l, _ in rs):.2f} | {ok}/{len(rs)} |")
peak = {g: max(st.median(c for c, _, _ in rs) for (r, gg), rs in by.items() if gg == g) for g in (1, 2)}
print(f"\nhighest rate sustained in every round: 1 generator {best[1]}/s, 2 generators {best[2]}/s")
print(f"highest median completed rate at any offered rate: 1 generator {peak[1]:.0f}/s, 2 generators {peak[2]:.0f}/s")
EOF
