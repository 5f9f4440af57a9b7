#!/usr/bin/env bash
# Each sidecar hop's added latency and CPU, next to Istio's published
# figures (docs/PERFORMANCE.md, "Sidecars"). A 2-hop chain, split, over
# grpc at RATE req/s (default 200; Istio measured at 1000), each proxy program in sidecar and node
# mode and no proxy at all, REPS runs each interleaved, then a table from
# svclab-analysis. About 5 minutes with the defaults.
#
#   bash scripts/bench/sidecar.sh                 # RATE=200 REPS=3 DURATION=6s
#   KEEP=results/bench-sidecar bash scripts/bench/sidecar.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${SVCLAB_BIN:-bin/svclab}
VENV=${SVCLAB_VENV:-.venv}
RATE=${RATE:-200}
REPS=${REPS:-3}
DURATION=${DURATION:-6s}
PAYLOAD=${PAYLOAD:-small}
out=${KEEP:-$(mktemp -d)}
[ -n "${KEEP:-}" ] || trap 'rm -rf "$out"' EXIT
mkdir -p "$out"
sidecars='"none"'
printf '[app]\nname = "chain"\n[deploy]\nplacement = "split"\n[load]\nrate = 1\n' >"$out/check.toml"
for s in envoy nginx haproxy; do
  if $BIN plan --set deploy.sidecar=$s "$out/check.toml" >/dev/null 2>&1; then
    sidecars="$sidecars, \"$s\""
  else
    echo "sidecar.sh: $s is not installed; left out" >&2
  fi
done
cat >"$out/bench-sidecar.toml" <<TOML
[app]
name = "chain"
hops = 2
payload = "$PAYLOAD"
[deploy]
transport = "grpc"
placement = "split"
[load]
mode = "open"
arrival = "constant"
rate = $RATE
connections = 16
warmup = "2s"
duration = "$DURATION"
[experiment]
name = "bench-sidecar"
repetitions = $REPS
order = "interleaved"
response = "p50_ms"
seed = 1
[experiment.factors]
"deploy.sidecar" = [$sidecars]
"deploy.proxy_mode" = ["sidecar", "node"]
TOML
$BIN run --no-report --results "$out" "$out/bench-sidecar.toml" >&2
$VENV/bin/python -c 'import sys; from svclab_analysis.replications.s2mesh import main; sys.exit(main(sys.argv[1:]))' bench "$out"/bench-sidecar-*
