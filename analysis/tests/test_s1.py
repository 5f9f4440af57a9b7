"""S1's region: per-configuration means and Pearson correlations over runs,
checked against scipy, and the two verdicts."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats
from stores import est_text, write_store

from svclab_analysis import replications as rp
from svclab_analysis.replications.s1 import numeric

CPU = "deploy.autoscale.products.cpu_target"
MEM = "deploy.autoscale.products.memory_target"
REPLICAS = "deploy.replicas.products"
NOISE = [-1.0, 0.5, 0.5]  # per repetition; sums to 0


def set_throughput(d: Path, rps_err: dict[str, tuple[float, int]]) -> None:
    """Give each run (by id) its own request rate and error count."""
    for rd in (d / "runs").iterdir():
        if rd.name not in rps_err:
            continue
        rps, errors = rps_err[rd.name]
        sj = json.loads((rd / "summary.json").read_text())
        for op in sj["operations"]:
            op["rps"], op["errors"] = rps, errors
        (rd / "summary.json").write_text(json.dumps(sj))


def runs_of(d: Path) -> list[dict[str, Any]]:
    return [json.loads((rd / "run.json").read_text()) for rd in sorted((d / "runs").iterdir())]


def test_numeric_levels() -> None:
    assert numeric("0.5") == 0.5
    assert numeric("512MiB") == 512.0
    assert numeric("1GiB") == 1024.0
    assert math.isnan(numeric("grpc"))


def test_hpa_correlations_and_verdict(tmp_path: Path) -> None:
    # Latency falls steeply with the memory target and barely with the CPU
    # target; throughput (served requests) rises with the memory target.
    def lat(lv: dict[str, Any], rep: int) -> float:
        return 200.0 - 0.02 * lv[CPU] - 0.8 * lv[MEM] + 3.0 * NOISE[rep - 1] * (1 + lv[CPU] / 90)

    def thr(lv: dict[str, Any], rep: int) -> float:
        return 100.0 + 0.2 * lv[MEM] + 2.0 * NOISE[(rep + lv[CPU] // 40) % 3]

    factors = [(CPU, [50, 90]), (MEM, [50, 90])]
    d = write_store(tmp_path, "s1-hpa", factors,
                    lambda lv, rep: {"total": {"mean_ms": lat(lv, rep)}}, reps=3)
    runs = runs_of(d)
    set_throughput(d, {r["id"]: (thr(r["levels"], r["repetition"]), 0) for r in runs})
    sec = rp.build_section(rp.STUDIES["s1a"], d)
    text, claims = sec.text, sec.claims

    cpu = np.array([r["levels"][CPU] for r in runs], dtype=float)
    mem = np.array([r["levels"][MEM] for r in runs], dtype=float)
    y_lat = np.array([lat(r["levels"], r["repetition"]) for r in runs])
    y_thr = np.array([thr(r["levels"], r["repetition"]) for r in runs])
    sig = {}
    for name, x in (("cpu_target", cpu), ("memory_target", mem)):
        for metric, y in (("mean latency (ms)", y_lat), ("throughput (req/s)", y_thr)):
            res = stats.pearsonr(x, y)
            ci = res.confidence_interval(0.95)
            cell = f"{res.statistic:+.2f} ({ci.low:+.2f} to {ci.high:+.2f})"
            assert f"| {name} | {metric} | {cell} |" in text, (name, metric)
            sig[(name, metric)] = ci.low > 0 or ci.high < 0
    # The data were built so that only the memory target's intervals exclude 0.
    assert sig[("memory_target", "mean latency (ms)")]
    assert not sig[("cpu_target", "mean latency (ms)")]
    assert "mean latency (ms): holds" in text
    # Each configuration's mean latency over its three runs, with its t interval.
    cell = [lat({CPU: 90, MEM: 90}, rep) for rep in (1, 2, 3)]
    assert est_text(cell) in text
    assert claims and claims[0].claim == "memory targets matter more than CPU targets"


def test_horizontal_overscaling(tmp_path: Path) -> None:
    base = {1: 135.0, 6: 150.0, 11: 134.0}
    d = write_store(tmp_path, "s1-horizontal", [(REPLICAS, [1, 6, 11])],
                    lambda lv, rep: {"total": {"mean_ms": 500.0}}, reps=5)
    runs = runs_of(d)
    # 1% of requests fail at 11 replicas, so served throughput is 0.99 × rps.
    rps = {r["id"]: base[r["levels"][REPLICAS]] + r["repetition"] - 3 for r in runs}
    errs = {r["id"]: 10 if r["levels"][REPLICAS] == 11 else 0 for r in runs}
    set_throughput(d, {k: (v, errs[k]) for k, v in rps.items()})
    sec = rp.build_section(rp.STUDIES["s1h"], d)
    text, claims = sec.text, sec.claims
    served = {k: v * (1 - errs[k] / 1000) for k, v in rps.items()}  # 100 req/s × 10 s sent
    at = {n: np.array([served[r["id"]] for r in runs if r["levels"][REPLICAS] == n])
          for n in (6, 11)}
    ratio = float(np.median(at[11]) / np.median(at[6]))
    assert "Throughput peaks at 6 replicas" in text
    assert f"at 11 it is {ratio:.3g}×" in text
    assert "Verdict on *over-scaling hurts*: **holds**" in text
    assert claims[0].verdict == "holds"
