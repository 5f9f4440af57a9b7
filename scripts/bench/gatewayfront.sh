#!/usr/bin/env bash
# What the local deployer's gateway front (the stable URL over a replicated
# entry's gateways) adds to a request: BenchmarkGatewayFront in
# internal/deploy/front calls one replica's gateway through the front and
# straight, turn by turn, from the same client, and reports both medians.
# The table gives the median of each metric over COUNT runs.
#
#   scripts/bench/gatewayfront.sh
#   COUNT=5 BENCHTIME=10000x scripts/bench/gatewayfront.sh
set -euo pipefail

cd "$(dirname "$0")/../.."
COUNT=${COUNT:-3}
BENCHTIME=${BENCHTIME:-3000x}
GO=${GO:-go}

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
"$GO" test -c -o "$bin/front.test" ./internal/deploy/front/

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nproc) CPUs, $("$GO" env GOVERSION), count=$COUNT benchtime=$BENCHTIME"
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin/front.test" -test.run '^$' -test.bench '^BenchmarkGatewayFront$' \
	-test.benchtime "$BENCHTIME" -test.count "$COUNT" | tee "$bin/out.txt" >&2
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

awk '
function median(key,    n, i, j, t, a) {
	n = split(vals[key], a, " ")
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
	return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
/^BenchmarkGatewayFront/ { for (i = 3; i < NF; i += 2) vals[$(i+1)] = vals[$(i+1)] " " $i }
END {
	printf "\n%14s %14s %10s %14s %14s %14s\n", "front p50 us", "direct p50 us", "p50 ratio", "added p50 us", "front p99 us", "direct p99 us"
	printf "%14.1f %14.1f %10.3f %14.1f %14.1f %14.1f\n", median("front-p50-us"), median("direct-p50-us"),
		median("p50-ratio"), median("added-p50-us"), median("front-p99-us"), median("direct-p99-us")
}' "$bin/out.txt"
