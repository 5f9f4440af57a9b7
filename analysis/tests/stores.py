"""Result stores for the replications' tests, in the docs/RESULTS.md layout.

Each store holds per-run numbers chosen so that the expected table entries
can be computed independently in the tests (scipy's t quantile, plain numpy
sums of squares); test_golden.py builds one store per study from them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from svclab_analysis.formatting import num

LATENCY_KEYS = ["mean_ms", "stdev_ms", "min_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms",
                "p999_ms", "max_ms"]
DURATION = 10

# (levels, repetition) -> {operation: {metric: value}}; a missing metric is
# derived from p50_ms.
Values = Callable[[dict[str, Any], int], dict[str, dict[str, float]]]


def _latency(m: dict[str, float]) -> dict[str, float]:
    base = m.get("p50_ms", m.get("mean_ms", m.get("p95_ms", 1.0)))
    out = {k: base for k in LATENCY_KEYS}
    out["stdev_ms"] = base / 10
    out.update({k: v for k, v in m.items() if k in LATENCY_KEYS})
    return out


def write_store(
    root: Path,
    name: str,
    factors: list[tuple[str, list[Any]]],
    values: Values,
    reps: int,
    stamp: str = "20260102-030405",
    rps: float = 100.0,
    cpu_per_s: float = 0.5,
    bottleneck: Callable[[dict[str, Any], int], bool] | None = None,
    replicate: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
) -> Path:
    """A results directory `<root>/<name>-<stamp>` as svclab run writes it."""
    d = root / f"{name}-{stamp}"
    (d / "runs").mkdir(parents=True)
    plan = []
    for rep in range(1, reps + 1):
        for cell in itertools.product(*[lv for _, lv in factors]):
            plan.append((dict(zip([n for n, _ in factors], cell, strict=True)), rep))
    runs = []
    for i, (levels, rep) in enumerate(plan, start=1):
        h = hashlib.sha256(json.dumps(levels, sort_keys=True).encode()).hexdigest()[:6]
        rid = f"r{i:03d}-{h}"
        runs.append({"id": rid, "index": i, "repetition": rep, "levels": levels,
                     "spec": spec or {}})
        rd = d / "runs" / rid
        rd.mkdir()
        flag = bool(bottleneck and bottleneck(levels, rep))
        (rd / "run.json").write_text(json.dumps({
            "id": rid, "index": i, "repetition": rep, "levels": levels, "status": "ok",
            "reason": "", "started": "2026-01-02T03:04:05Z",
            "ended": f"2026-01-02T03:{4 + i // 60:02d}:{(5 + i) % 60:02d}Z",
            "warmup_s": 1, "duration_s": DURATION,
            "warnings": ["generator_bottleneck: 5% of sends were late"] if flag else [],
            "generator": {"cpu_s": 1.0, "cpu_percent": 12.5, "late_sends": 50 if flag else 0,
                          "dropped": 0, "lag_p50_ms": 0.01, "lag_p99_ms": 7.5 if flag else 0.2,
                          "lag_max_ms": 9.0, "gc_pause_total_ms": 1, "gc_pause_max_ms": 0.1,
                          "bottleneck": flag, "reason": "late" if flag else ""},
            "processes": [{"name": "g0", "components": ["x"], "pid": 100 + i},
                          {"name": "loadgen", "pid": 1}],
        }))
        count = int(rps * DURATION)
        ops = []
        for op, m in values(levels, rep).items():
            ops.append({"name": op, "kind": "total" if op == "total" else "request",
                        "count": count, "errors": 0, "rps": rps, "errors_by_class": {},
                        "latency": _latency(m), "service_time": _latency(m)})
        (rd / "summary.json").write_text(json.dumps(
            {"duration_s": float(DURATION), "operations": ops, "late_sends": 0, "dropped": 0}))
        t = np.arange(-1.0, DURATION + 1.0)
        pd.DataFrame({
            "t_s": t, "process": ["g0"] * len(t), "pid": np.full(len(t), 100 + i, dtype="int64"),
            "cpu_s": 3.0 + cpu_per_s * np.clip(t, -1, DURATION),
            "rss_bytes": np.full(len(t), 2**25, dtype="int64"),
        }).to_parquet(rd / "resources.parquet", index=False)
    (d / "experiment.json").write_text(json.dumps({
        "name": name, "svclab_version": "v-test", "svclab_commit": "abc",
        "created": "2026-01-02T03:04:05Z", "spec_path": f"experiments/{name}.toml",
        "spec_text": "", "spec_sha256": "", "seed": 7,
        "design": {"kind": "full", "order": "random", "repetitions": reps, "warmup_s": 1,
                   "duration_s": DURATION, "cooldown_s": 0},
        "factors": [{"name": n, "letter": chr(65 + i), "levels": lv}
                    for i, (n, lv) in enumerate(factors)],
        "response": {"metric": "p50_ms", "operation": "total"},
        "runs": runs,
        "host": {"hostname": "h", "cpu_model": "Test CPU", "cores": 2, "kernel": "6",
                 "os": "linux", "go_version": "go", "memory_bytes": 2**34},
    }))
    if replicate is not None:
        (d / "replicate.json").write_text(json.dumps(replicate))
    return d


def t_interval(x: list[float]) -> tuple[float, float, float]:
    a = np.asarray(x, dtype=float)
    m = float(a.mean())
    half = float(stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / math.sqrt(len(a)))
    return m, m - half, m + half


def est_text(x: list[float]) -> str:
    m, lo, hi = t_interval(x)
    return f"{num(m)} ({num(lo)}–{num(hi)})"


# ---------------------------------------------------------------- S3

# Per-run medians (ms): five runs per cell. gRPC wins small, and here gRPC
# also wins large (the opposite of the paper), which the verdict must say.
S3_P50 = {
    ("grpc", "std"): [1.0, 1.1, 1.2, 1.3, 1.4],
    ("http", "std"): [2.0, 2.2, 2.4, 2.6, 2.8],
    ("grpc", "large"): [8.0, 8.5, 9.0, 9.5, 10.0],
    ("http", "large"): [40.0, 42.0, 44.0, 46.0, 48.0],
}


def s3_store(root: Path, name: str = "s3-style", **kw: Any) -> Path:
    def values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
        return {"total": {"p50_ms": S3_P50[(lv["deploy.transport"], lv["app.size"])][rep - 1]}}

    return write_store(root, name, [("deploy.transport", ["grpc", "http"]),
                                    ("app.size", ["std", "large"])], values, reps=5, **kw)



def s4_values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
    base = 0.8 if lv["deploy.transport"] == "grpc" else 0.4
    n = int(lv["app.string_len"])
    jitter = 0.01 * rep
    return {
        "total": {"mean_ms": base + jitter},
        "void": {"mean_ms": base + jitter},
        "long": {"mean_ms": base + 0.01 + jitter},
        "eightlongs": {"mean_ms": base + 0.02 + jitter},
        "string": {"mean_ms": base + n / 1000 + jitter},
        "movie": {"mean_ms": base + 0.1 + jitter},
    }


def s0_values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
    u = int(lv["load.users"])
    p95 = {"monolith": 2.0 + u / 100, "two": 3.0 + u / 50, "split": 4.0 + u / 5}[
        lv["deploy.placement"]]
    return {"total": {"p95_ms": p95 * (1 + 0.02 * rep)}}
