#!/usr/bin/env bash
# Round-trip latency of svclab's transports beside the bare libraries they
# wrap (BenchmarkRoundTrip in internal/runtime/transport/all), printed as a
# ratio table. Each sub-benchmark alternates svclab and bare calls, so a
# ratio holds up on a busy machine; the table gives the median over COUNT
# runs of each figure and of each run's ratio.
#
#   scripts/bench/transports.sh                 # defaults below
#   COUNT=5 BENCHTIME=20000x scripts/bench/transports.sh
#   CPUS=2,3 scripts/bench/transports.sh        # pin with taskset
#
# Pinning helps where there are cores to spare for the benchmark alone; on
# a 2-core machine the client, the server and the runtime need both, so by
# default nothing is pinned.
set -euo pipefail

cd "$(dirname "$0")/../.."
COUNT=${COUNT:-3}
BENCHTIME=${BENCHTIME:-5000x}
CPUS=${CPUS:-}
GO=${GO:-go}

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
"$GO" test -c -o "$bin/all.test" ./internal/runtime/transport/all/

pin=()
if [[ -n "$CPUS" ]]; then
	pin=(taskset -c "$CPUS")
fi

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nproc) CPUs, $("$GO" env GOVERSION), count=$COUNT benchtime=$BENCHTIME${CPUS:+ cpus=$CPUS}"
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"${pin[@]}" "$bin/all.test" -test.run '^$' -test.bench '^BenchmarkRoundTrip$' \
	-test.benchtime "$BENCHTIME" -test.count "$COUNT" | tee "$bin/out.txt" >&2

# Each result line: name, iterations, then value/unit pairs.
awk '
function median(key,    n, i, j, t, a) {
	n = split(vals[key], a, " ")
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
	if (n == 0) return ""
	return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
/^BenchmarkRoundTrip\// {
	name = $1; sub(/^BenchmarkRoundTrip\//, "", name); sub(/-[0-9]+$/, "", name)
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
	for (i = 3; i < NF; i += 2) vals[name SUBSEP $(i+1)] = vals[name SUBSEP $(i+1)] " " $i
}
END {
	printf "\n%-14s %10s %10s %12s %10s %10s %10s %8s  %s\n", "size/transport", "p50 us", "p99 us", "bare", "p50 us", "p99 us", "p50 ratio", "target", "verdict"
	for (k = 1; k <= n; k++) {
		name = order[k]
		split(name, parts, "/")
		# inproc and protorpc wrap no library: their bare peer is raw TCP.
		# protorpc is held to 2x the network floor for small messages only
		# (its target); the others to 1.10x the library they wrap.
		bare = (parts[2] == "inproc" || parts[2] == "protorpc") ? "rawtcp" : parts[2] "-bare"
		target = (parts[2] == "inproc") ? 0.01 : (parts[2] == "protorpc") ? 2.00 : 1.10
		r = median(name SUBSEP "p50-ratio")
		shown = (target < 1 ? "<" : "<=") target
		verdict = (r <= target ? "met" : "MISSED")
		if (parts[2] == "protorpc" && parts[1] != "100B") { shown = "-"; verdict = "(no target)" }
		printf "%-14s %10.3f %10.3f %12s %10.3f %10.3f %10.4f %8s  %s\n", name,
			median(name SUBSEP "p50-us"), median(name SUBSEP "p99-us"), bare,
			median(name SUBSEP "bare-p50-us"), median(name SUBSEP "bare-p99-us"), r,
			shown, verdict
		d = median(name SUBSEP "direct-p50-us")
		if (d != "") printf "%-14s %10.3f %10s %12s\n", "  direct call", d, "", "(floor)"
		f = median(name SUBSEP "stub-floor-p50-us")
		if (f != "") printf "%-14s %10.3f %10s %12s\n", "  stub floor", f, "", "(grpc-go stub, nothing behind it)"
	}
}' "$bin/out.txt"
