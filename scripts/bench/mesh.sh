#!/usr/bin/env bash
# What the in-process mesh features cost a three-hop chain at 100 req/s:
# runs experiments/mesh-overhead.toml (deploy.tracing {0, 1} x deploy.mtls
# {false, true}, 4 runs each, interleaved) and prints each configuration's
# mean of per-run p50 and p99, and its p50 over the bare chain's. The
# issue's bound: tracing at 1.0 adds at most 5% to p50 (docs/PERFORMANCE.md).
#
#   scripts/bench/mesh.sh        # needs bin/svclab (make build) and Jaeger (make jaeger)
set -euo pipefail

cd "$(dirname "$0")/../.."
BIN=${SVCLAB_BIN:-bin/svclab}
PYTHON=${PYTHON:-python3}
jaeger=${SVCLAB_JAEGER:-${XDG_CACHE_HOME:-$HOME/.cache}/svclab/jaeger-v1.76.0/jaeger}
if [[ ! -x "$jaeger" ]]; then
	echo "mesh.sh: no Jaeger at $jaeger (make jaeger): skipped"
	exit 0
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The report needs the analysis package; the numbers below do not.
SVCLAB_VENV=/nonexistent "$BIN" run --results "$out" experiments/mesh-overhead.toml 2>&1 | grep -v '^svclab: report' | tail -3 || true
"$PYTHON" - "$out"/mesh-overhead-* <<'PY'
import json, pathlib, statistics, sys
root = pathlib.Path(sys.argv[1])
rows = {}
for d in sorted((root / "runs").iterdir()):
    if d.name.startswith(".tmp-"):
        continue
    run = json.loads((d / "run.json").read_text())
    if run["status"] != "ok":
        continue
    op = next(o for o in json.loads((d / "summary.json").read_text())["operations"] if o["name"] == "total")
    key = (float(run["levels"]["deploy.tracing"]), str(run["levels"]["deploy.mtls"]).lower())
    rows.setdefault(key, []).append((op["latency"]["p50_ms"], op["latency"]["p99_ms"], len(run["warnings"])))
base = statistics.mean(r[0] for r in rows[(0.0, "false")])
print(f"{'tracing':>8} {'mtls':>6} {'runs':>5} {'p50 ms':>8} {'p99 ms':>8} {'p50 / bare':>11}")
for (tr, mt), rs in sorted(rows.items()):
    p50 = statistics.mean(r[0] for r in rs)
    p99 = statistics.mean(r[1] for r in rs)
    print(f"{tr:>8g} {mt:>6} {len(rs):>5} {p50:>8.3f} {p99:>8.3f} {p50 / base:>11.3f}")
PY
