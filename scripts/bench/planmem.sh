#!/usr/bin/env bash
# Planning memory of `svclab plan` and `svclab run` (issue 29, front doors):
# the peak RSS of each for a design of POINTS design points (the chain, a
# two-factor full factorial of load.rate × load.timeout). plan runs to the
# end; run is stopped (SIGTERM) once it has planned, written
# experiment.json and started its first run, so its peak is the planning's.
#
# Environment: POINTS (default 100000, a square number is exact),
# SVCLAB (a built svclab; default: build one).
set -euo pipefail

cd "$(dirname "$0")/../.."
POINTS=${POINTS:-100000}
WORK=$(mktemp -d)
RUNPID=
cleanup() {
	[ -n "$RUNPID" ] && kill "$RUNPID" 2>/dev/null && wait "$RUNPID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

SVCLAB=${SVCLAB:-}
if [ -z "$SVCLAB" ]; then
	go build -o "$WORK/svclab" ./cmd/svclab
	SVCLAB=$WORK/svclab
fi

side=$(awk -v n="$POINTS" 'BEGIN { s = int(sqrt(n)); while (s * s < n) s++; print s }')
rates=$(seq -s, 1 "$side")
timeouts=$(seq 1 "$side" | sed 's/.*/"&ms"/' | paste -sd,)
cat >"$WORK/big.toml" <<EOF
[app]
name = "chain"
[load]
rate = 10
duration = "1s"
[experiment]
max_runs = $((side * side))
[experiment.factors]
"load.rate" = [$rates]
"load.timeout" = [$timeouts]
EOF
echo "planmem: $((side * side)) design points, $(nproc) CPUs, $(date -u '+%Y-%m-%d %H:%M UTC')"

peak() { awk '/Maximum resident set size/ { printf "%.2f GB", $NF / 1048576 }' "$1"; }

/usr/bin/time -v "$SVCLAB" plan --brief "$WORK/big.toml" >/dev/null 2>"$WORK/plan.time"
echo "planmem: svclab plan: peak RSS $(peak "$WORK/plan.time")"

/usr/bin/time -v "$SVCLAB" run --no-report --results "$WORK/results" "$WORK/big.toml" >/dev/null 2>"$WORK/run.time" &
RUNPID=$!
# The first run's directory appears once planning, experiment.json and the
# backing services are done.
until compgen -G "$WORK/results/*/runs/.tmp-*" >/dev/null || ! kill -0 "$RUNPID" 2>/dev/null; do
	sleep 0.5
done
pkill -TERM -P "$RUNPID" 2>/dev/null || true
wait "$RUNPID" 2>/dev/null || true
RUNPID=
echo "planmem: svclab run (stopped at its first run): peak RSS $(peak "$WORK/run.time")"
