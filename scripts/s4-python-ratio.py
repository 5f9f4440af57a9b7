"""S4 as the paper ran it: Python gRPC, and Go gRPC, against Go net/rpc.

Per operation, from the newest s4-python results and an s4-rpc run at the
same string length, made the same day:

    bin/svclab run experiments/s4-python.toml
    bin/svclab run --set 'experiment.factors."app.string_len"=[16, 32]' \
        --set experiment.name=s4-rpc-16 experiments/s4-rpc.toml
    .venv/bin/python scripts/s4-python-ratio.py results

Each ratio is of the run means' medians, with a 95% bootstrap interval and
Mann-Whitney's p over runs (svclab_analysis.stats.mann_whitney).
"""
import sys
from pathlib import Path

from svclab_analysis.formatting import est, num
from svclab_analysis.replications.store import latest_results
from svclab_analysis.results import load_experiment, response_table
from svclab_analysis.stats import mann_whitney

root = Path(sys.argv[1])
py = latest_results(root, "s4-python")
rpc = latest_results(root, "s4-rpc-16")
print("s4-python:", py, " s4-rpc-16:", rpc)
epy = load_experiment(py)
erpc = load_experiment(rpc)
ops = sorted(set(epy.metrics["operation"]))
print(f"{'operation':<12} {'py grpc ms':>10} {'go grpc ms':>10} {'go netrpc ms':>12}  {'py grpc ÷ netrpc':<26} {'go grpc ÷ netrpc':<26} {'py ÷ go grpc':<26}")
def f(r: dict[str, float]) -> str:
    return f"{est(r['ratio'], r['ratio_ci_low'], r['ratio_ci_high'], '×')} p={r['p']:.2g}"


for op in ops:
    a = response_table(epy, op)
    b = response_table(erpc, op)
    pyg = a[a["deploy.languages.frontend"].astype(str) == "python"]["mean_ms"].to_numpy()
    gog = a[a["deploy.languages.frontend"].astype(str) == "go"]["mean_ms"].to_numpy()
    sel = (b["deploy.transport"].astype(str) == "netrpc") & (b["app.string_len"].astype(str) == "16")
    net = b[sel]["mean_ms"].to_numpy()
    r1 = mann_whitney(pyg, net); r2 = mann_whitney(gog, net); r3 = mann_whitney(pyg, gog)
    print(f"{op:<12} {num(r1['median_a']):>10} {num(r2['median_a']):>10} {num(r1['median_b']):>12}  {f(r1):<26} {f(r2):<26} {f(r3):<26}  n={len(pyg)},{len(gog)},{len(net)}")
