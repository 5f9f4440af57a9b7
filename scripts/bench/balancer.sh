#!/usr/bin/env bash
# What client-side load balancing costs a call: BenchmarkOverOne in
# internal/runtime/balancer calls one server through a balancer over its one
# endpoint and through a bare connection, turn by turn, and reports the
# ratio of the medians. The table gives the median over COUNT runs.
#
#   scripts/bench/balancer.sh
#   COUNT=5 BENCHTIME=10000x scripts/bench/balancer.sh
set -euo pipefail

cd "$(dirname "$0")/../.."
COUNT=${COUNT:-3}
BENCHTIME=${BENCHTIME:-5000x}
GO=${GO:-go}

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
"$GO" test -c -o "$bin/balancer.test" ./internal/runtime/balancer/

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nproc) CPUs, $("$GO" env GOVERSION), count=$COUNT benchtime=$BENCHTIME"
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin/balancer.test" -test.run '^$' -test.bench '^BenchmarkOverOne$' \
	-test.benchtime "$BENCHTIME" -test.count "$COUNT" | tee "$bin/out.txt" >&2

awk '
function median(key,    n, i, j, t, a) {
	n = split(vals[key], a, " ")
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
	return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
/^BenchmarkOverOne\// {
	name = $1; sub(/^BenchmarkOverOne\//, "", name); sub(/-[0-9]+$/, "", name)
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
	for (i = 3; i < NF; i += 2) vals[name SUBSEP $(i+1)] = vals[name SUBSEP $(i+1)] " " $i
}
END {
	printf "\n%-10s %12s %12s %10s %8s  %s\n", "transport", "balanced p50", "bare p50 us", "p50 ratio", "target", "verdict"
	for (k = 1; k <= n; k++) {
		name = order[k]; r = median(name SUBSEP "p50-ratio")
		printf "%-10s %12.2f %12.2f %10.4f %8s  %s\n", name, median(name SUBSEP "p50-us"),
			median(name SUBSEP "bare-p50-us"), r, "<=1.02", (r <= 1.02 ? "met" : "MISSED")
	}
}' "$bin/out.txt"
