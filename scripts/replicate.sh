#!/usr/bin/env bash
# Run the replication specs and regenerate the tables of docs/REPLICATIONS.md.
#
#   make replicate                        # build, venv, then this script (about 45 minutes)
#   bash scripts/replicate.sh             # the same, builds what is missing
#   bash scripts/replicate.sh s3 s4       # only these studies (s3 s3c s4 s2 s0), then their tables
#   RESULTS=/tmp/r bash scripts/replicate.sh s0 -- --set experiment.repetitions=2
#   S3_SPEC=experiments/s3-style-go.toml bash scripts/replicate.sh s3 s3c
#                                         # S3's Go cells alone (20 minutes)
#                                         # extra arguments after -- go to `svclab run`
#
# For each spec it records, in <results dir>/replicate.json, the exact
# command, its wall time (svclab run, analysis included) and the load
# average before and after, which the generated tables quote. Then
#   python -m svclab_analysis.replications
# rewrites the marked regions of docs/REPLICATIONS.md from the newest
# results of each spec. A spec that fails does not stop the others; the
# script exits non-zero at the end if any did.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
SVCLAB=${SVCLAB:-$ROOT/bin/svclab}
VENV=${SVCLAB_VENV:-$ROOT/.venv}
RESULTS=${RESULTS:-results}
DOC=${DOC:-docs/REPLICATIONS.md}

declare -A SPEC=(
  [s3]=${S3_SPEC:-experiments/s3-style.toml}
  [s3c]=${S3_SPEC:-experiments/s3-style.toml}
  [s4]=experiments/s4-rpc.toml
  [s2]=experiments/s2-payload.toml
  [s0]=experiments/s0-granularity.toml
)
# s3c is S3's design with back-to-back calls (one closed-loop user) instead
# of the open loop at 3 req/s: the same question under the other load shape.
# It keeps the spec's warm-up by calls (25,000, bounded by 60 s), which is
# what the JVM's JIT needs (docs/LANGUAGES.md).
declare -A ARGS=(
  [s3c]="--set load.mode=closed --set load.rate=0 --set load.users=1 --set load.duration=8s --set experiment.name=s3-style-closed"
)
ORDER=(s3 s3c s4 s2 s0)

studies=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; extra=("$@"); break ;;
    s0|s2|s3|s3c|s4) studies+=("$1"); shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "replicate.sh: unknown argument '$1' (studies: ${ORDER[*]}; svclab run flags after --)" >&2; exit 2 ;;
  esac
done
[ ${#studies[@]} -eq 0 ] && studies=("${ORDER[@]}")

if [ ! -x "$SVCLAB" ] || [ ! -x "$VENV/bin/python" ]; then
  echo "replicate.sh: building svclab and the analysis virtualenv (make build venv)" >&2
  make build venv >&2 || exit 1
fi

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
now() { date +%s.%N; }

failed=0
summary=()
for s in "${studies[@]}"; do
  spec=${SPEC[$s]}
  read -r -a own <<<"${ARGS[$s]:-}"
  cmd=(bin/svclab run --results "$RESULTS" "${own[@]}" "${extra[@]}" "$spec")
  shown=$(printf '%q ' "${cmd[@]}"); shown=${shown% }
  echo "== $s: $shown" >&2
  before=$(loadavg)
  started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  t0=$(now)
  out=$(mktemp)
  samples=$(mktemp)
  # The 1-minute load average every 10 s while the spec runs (our own runs
  # add up to about 2 on this 2-core machine; the rest is other work).
  ( while :; do cut -d' ' -f1 /proc/loadavg >>"$samples"; sleep 10; done ) &
  sampler=$!
  SVCLAB_VENV=$VENV "$SVCLAB" run --results "$RESULTS" "${own[@]}" "${extra[@]}" "$spec" | tee "$out"
  rc=${PIPESTATUS[0]}
  t1=$(now)
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  after=$(loadavg)
  during=$(awk '{ s += $1; if ($1 > m) m = $1; n++ } END { if (n) printf "%d %.2f %.2f", n, s / n, m; else print "0 0 0" }' "$samples")
  rm -f "$samples"
  dir=$(sed -n 's/^results: //p' "$out" | tail -n 1)
  rm -f "$out"
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "replicate.sh: $s: svclab run exited $rc and named no results directory" >&2
    failed=1
    summary+=("$s: failed (exit $rc) after ${wall}s")
    continue
  fi
  "$VENV/bin/python" - "$dir/replicate.json" "$shown" "$wall" "$before" "$after" "$started" "$rc" "$during" <<'EOF'
import json, sys
path, command, wall, before, after, started, rc, during = sys.argv[1:]
n, mean, peak = during.split()
with open(path, "w", encoding="utf-8") as fh:
    json.dump({"command": command, "wall_s": float(wall), "loadavg_before": before,
               "loadavg_after": after, "loadavg_during": {"samples": int(n),
               "mean_1m": float(mean), "max_1m": float(peak)},
               "started": started, "exit_code": int(rc)}, fh, indent=2)
    fh.write("\n")
EOF
  if [ "$rc" -ne 0 ]; then
    failed=1
    summary+=("$s: exit $rc after ${wall}s, results in $dir")
  else
    summary+=("$s: ${wall}s, results in $dir")
  fi
done

# The summary and the runs table are rewritten too, from the newest results
# of every study.
only=$(IFS=,; echo "${studies[*]},summary,runs")
echo "== regenerating $DOC ($only)" >&2
if ! "$VENV/bin/python" -m svclab_analysis.replications --results "$RESULTS" --doc "$DOC" --only "$only"; then
  failed=1
fi
printf '%s\n' "${summary[@]}" >&2
exit $failed
