#!/usr/bin/env bash
# What the class-data archive of `make java` (scripts/java-cds.sh) saves a
# Java host's start: the host of the select app's frontend over http
# (Spring) with a gRPC control listener, as the training ran it, started
# ROUNDS times with and without -XX:SharedArchiveFile, alternating; each
# start is stopped with SIGTERM once it prints its ready line. The table
# gives the median time to the ready line and the median CPU (user + sys)
# of the whole start and stop, and their ratios.
#
#   scripts/bench/java-start.sh
#   ROUNDS=10 scripts/bench/java-start.sh
set -euo pipefail

cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
jar=$(realpath impl/java/target/svclab-java.jar)
archive=impl/java/target/svclab-java.jsa
[ -s "$archive" ] || { echo "no $archive: run make java" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'pkill -KILL -f "^java .*$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
scripts/java-cds.sh --config "$tmp"

# start LABEL [JVM OPTION...]: one start and stop; appends "LABEL ready cpu".
start() {
	local label=$1
	shift
	rm -f "$tmp"/*.sock "$tmp/log"
	local t0
	t0=$(date +%s.%N)
	/usr/bin/time -f "%U %S" -o "$tmp/cpu" java "$@" -jar "$jar" --config "$tmp/config.json" >/dev/null 2>"$tmp/log" &
	local ready=
	for _ in $(seq 1 600); do
		if grep -q "svclab host ready" "$tmp/log"; then
			ready=$(echo "$(date +%s.%N) - $t0" | bc)
			break
		fi
		sleep 0.02
	done
	[ -n "$ready" ] || { echo "$label: not ready within 12 s" >&2; cat "$tmp/log" >&2; exit 1; }
	pkill -TERM -f "^java .*$tmp/config.json"
	wait
	echo "$label $ready $(awk '{print $1 + $2}' "$tmp/cpu")" >>"$tmp/rows"
}

for _ in $(seq 1 "$ROUNDS"); do
	start plain
	start archive -XX:SharedArchiveFile="$archive" -Xlog:cds=off -Xlog:cds+dynamic=off
done

python3 - "$tmp/rows" "$ROUNDS" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {k: [statistics.median(float(r[i]) for r in rows if r[0] == k) for i in (1, 2)] for k in ("plain", "archive")}
print(f"{sys.argv[2]} starts each, alternating; medians")
print("| start | ready (s) | CPU (s) |")
print("|---|---|---|")
for k in ("plain", "archive"):
    print(f"| {k} | {med[k][0]:.2f} | {med[k][1]:.2f} |")
print(f"| archive ÷ plain | {med['archive'][0] / med['plain'][0]:.2f}× | {med['archive'][1] / med['plain'][1]:.2f}× |")
EOF
