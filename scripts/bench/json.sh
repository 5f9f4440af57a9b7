#!/usr/bin/env bash
# Encode plus decode of S3's request (apps/select: 200 and 204,800 int32)
# with the http transport's generated JSON code (pbjson), beside
# encoding/json, goccy/go-json and bytedance/sonic on the equivalent plain
# Go struct, and protojson. Prints the median ns/op over COUNT runs and
# pbjson's ratio to the fastest of the three libraries. The benchmark is a
# module of its own (scripts/bench/jsoncodec), so that svclab does not
# depend on the libraries it is compared with.
#
#   scripts/bench/json.sh
#   COUNT=10 BENCHTIME=2s scripts/bench/json.sh
set -euo pipefail

cd "$(dirname "$0")/jsoncodec"
COUNT=${COUNT:-5}
BENCHTIME=${BENCHTIME:-1s}
GO=${GO:-go}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nproc) CPUs, $("$GO" env GOVERSION), count=$COUNT benchtime=$BENCHTIME"
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$GO" test -run '^$' -bench '^BenchmarkRoundTrip$' -benchtime "$BENCHTIME" -count "$COUNT" | tee "$out" >&2

# Lines: BenchmarkRoundTrip/<size>/<library>-<procs> iterations ns/op ...
awk '
function median(key,    n, i, j, t, a) {
	n = split(vals[key], a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
/^BenchmarkRoundTrip\// {
	split($1, p, "/"); sub(/-[0-9]+$/, "", p[3])
	for (i = 3; i < NF; i++) if ($(i+1) == "ns/op") vals[p[2] "/" p[3]] = vals[p[2] "/" p[3]] " " $i
	if (!(p[2] in seen)) { seen[p[2]] = 1; sizes[++ns] = p[2] }
	if (!(p[3] in lseen)) { lseen[p[3]] = 1; libs[++nl] = p[3] }
}
END {
	printf "\n| size |"
	for (l = 1; l <= nl; l++) printf " %s |", libs[l]
	printf " pbjson / fastest library |\n|---|"
	for (l = 1; l <= nl; l++) printf "---:|"
	printf "---:|\n"
	for (s = 1; s <= ns; s++) {
		size = sizes[s]; best = 0
		printf "| %s |", size
		for (l = 1; l <= nl; l++) {
			m = median(size "/" libs[l]); med[libs[l]] = m
			printf " %.0f |", m
			if (libs[l] != "pbjson" && libs[l] != "protojson" && (best == 0 || m < best)) best = m
		}
		printf " %.2f |\n", med["pbjson"] / best
	}
	print "\nns/op, median of each library; pbjson against encoding/json, goccy/go-json and sonic"
}' "$out"
