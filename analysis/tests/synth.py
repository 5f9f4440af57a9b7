"""Write a synthetic svclab result directory exactly in the docs/RESULTS.md layout.

The numbers are chosen so tests can state the expected values: each run's
p99 is its configuration's base value plus a known per-repetition offset.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

# Offsets of the three repetitions around each cell's mean: the cell mean of
# p99_ms is exactly the base value, and its sample sd is 0.1 ms.
REP_OFFSETS = [-0.1, 0.0, 0.1]

DEFAULT_FACTORS: list[dict[str, Any]] = [
    {"name": "deploy.transport", "letter": "A", "levels": ["grpc", "http"]},
    {"name": "app.payload", "letter": "B", "levels": ["small", "large"]},
]
# p99_ms per (transport, payload): gRPC wins small payloads, HTTP large ones.
DEFAULT_P99 = {("grpc", "small"): 2.0, ("http", "small"): 4.0,
               ("grpc", "large"): 8.0, ("http", "large"): 5.0}


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2), encoding="utf-8")


def make_results(
    root: Path,
    factors: list[dict[str, Any]] | None = None,
    p99: dict[tuple[Any, ...], float] | None = None,
    reps: int = 3,
    failed_cell: tuple[Any, ...] | None = ("http", "large"),
    bottleneck_run: int | None = 2,
    duration_s: int = 10,
    rps: float = 100.0,
    samples: bool = True,
    hlog: bool = False,
    seed: int = 7,
) -> Path:
    """Create `root` as a result directory and return it.

    With failed_cell set, one extra failed run of that configuration is added
    (it has only run.json, as a crashed run would).
    """
    factors = factors or DEFAULT_FACTORS
    p99 = p99 or DEFAULT_P99
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True)
    runs_dir = root / "runs"
    runs_dir.mkdir()
    # A leftover from a crash: never complete, must be ignored.
    (runs_dir / ".tmp-r999-deadbeef").mkdir()

    cells = list(itertools.product(*[f["levels"] for f in factors]))
    plan: list[dict[str, Any]] = []
    for rep in range(1, reps + 1):
        for cell in cells:
            plan.append({"levels": dict(zip([f["name"] for f in factors], cell, strict=True)),
                         "repetition": rep, "cell": cell})
    if failed_cell is not None:
        plan.append({"levels": dict(zip([f["name"] for f in factors], failed_cell, strict=True)),
                     "repetition": reps + 1, "cell": failed_cell, "failed": True})
    for i, p in enumerate(plan, start=1):
        h = hashlib.sha256(json.dumps(p["levels"], sort_keys=True).encode()).hexdigest()[:8]
        p["id"] = f"r{i:03d}-{h}"
        p["index"] = i

    spec_text = "[experiment]\nname = \"synthetic\"\nrepetitions = 3\n"
    _write_json(root / "experiment.json", {
        "name": "synthetic",
        "svclab_version": "v0.0.0-test",
        "svclab_commit": "abc1234",
        "created": "2026-01-02T03:04:05Z",
        "spec_path": "experiments/synthetic.toml",
        "spec_text": spec_text,
        "spec_sha256": hashlib.sha256(spec_text.encode()).hexdigest(),
        "seed": 42,
        "design": {"kind": "full", "order": "random", "repetitions": reps,
                   "warmup_s": 2, "duration_s": duration_s, "cooldown_s": 1},
        "factors": factors,
        "response": {"metric": "p99_ms", "operation": "total"},
        "runs": [{"id": p["id"], "index": p["index"], "repetition": p["repetition"],
                  "levels": p["levels"], "spec": {}} for p in plan],
        "host": {"hostname": "testhost", "cpu_model": "Test CPU @ 2.0GHz", "cores": 2,
                 "kernel": "6.1.0", "os": "linux", "go_version": "go1.22.0",
                 "memory_bytes": 24 * 2**30},
    })

    for p in plan:
        final = runs_dir / p["id"]
        final.mkdir()
        failed = p.get("failed", False)
        bottleneck = bottleneck_run is not None and p["index"] == bottleneck_run
        _write_json(final / "run.json", {
            "id": p["id"], "index": p["index"], "repetition": p["repetition"],
            "levels": p["levels"],
            "status": "failed" if failed else "ok",
            "reason": "process g1 exited with status 2" if failed else "",
            "stderr_tail": {"g1": "panic: boom"} if failed else {},
            "started": "2026-01-02T03:04:10Z", "ended": "2026-01-02T03:04:25Z",
            "warmup_s": 2, "duration_s": duration_s,
            "warnings": (["generator_bottleneck: 12% of sends were late by more than 1 ms"]
                         if bottleneck else []),
            "generator": {"cpu_s": 1.0, "cpu_percent": 10.0,
                          "late_sends": 120 if bottleneck else 0, "dropped": 0,
                          "lag_p50_ms": 0.01, "lag_p99_ms": 2.0 if bottleneck else 0.1,
                          "lag_max_ms": 3.0, "gc_pause_total_ms": 1.0, "gc_pause_max_ms": 0.2,
                          "bottleneck": bottleneck},
            "processes": [{"name": "g0", "components": ["hop1"], "pid": 1000 + p["index"]},
                          {"name": "loadgen", "pid": 2000 + p["index"]}],
        })
        if failed:
            continue
        y99 = p99[p["cell"]] + REP_OFFSETS[(p["repetition"] - 1) % len(REP_OFFSETS)]
        count = int(rps * duration_s)
        errors = 2 if p["cell"] == cells[-1] else 0
        lat = {"mean_ms": y99 / 2.5, "stdev_ms": y99 / 10, "min_ms": y99 / 8,
               "p50_ms": y99 / 3, "p90_ms": y99 / 1.6, "p95_ms": y99 / 1.3, "p99_ms": y99,
               "p999_ms": y99 * 1.5, "max_ms": y99 * 2}
        ops = [
            {"name": "total", "kind": "total", "count": count, "errors": errors, "rps": rps,
             "errors_by_class": {"http_503": errors, "timeout": 0, "connection": 0},
             "latency": lat, "service_time": {k: v * 0.9 for k, v in lat.items()}},
            {"name": "Echo", "kind": "request", "count": count, "errors": errors, "rps": rps,
             "errors_by_class": {}, "latency": lat,
             "service_time": {k: v * 0.9 for k, v in lat.items()}},
        ]
        _write_json(final / "summary.json", {"duration_s": float(duration_s), "operations": ops,
                                             "late_sends": 0, "dropped": 0})
        secs = np.arange(duration_s)
        ts = pd.DataFrame({
            "second": np.repeat(secs, 2).astype("int64"),
            "operation": ["total", "Echo"] * duration_s,
            "requests": np.full(2 * duration_s, int(rps), dtype="int64"),
            "errors": np.zeros(2 * duration_s, dtype="int64"),
            "rps": np.full(2 * duration_s, rps) + rng.normal(0, 1, 2 * duration_s),
            "p50_ms": np.full(2 * duration_s, y99 / 3),
            "p90_ms": np.full(2 * duration_s, y99 / 1.6),
            "p99_ms": y99 + rng.normal(0, y99 / 20, 2 * duration_s),
        })
        ts.to_parquet(final / "timeseries.parquet", index=False)
        # The system under test burns 0.5 CPU-s per second: 5 CPU-s over the
        # window for 1000 requests, so cpu_s_per_1k is 5.0 in every run.
        t = np.arange(-2.0, duration_s + 1.0)
        res = pd.DataFrame({
            "t_s": np.concatenate([t, t]),
            "process": ["g0"] * len(t) + ["loadgen"] * len(t),
            "pid": np.array([1000 + p["index"]] * len(t) + [2000 + p["index"]] * len(t),
                            dtype="int64"),
            "cpu_s": np.concatenate([10.0 + 0.5 * np.clip(t, -2, duration_s),
                                     3.0 + 0.1 * (t + 2)]),
            "rss_bytes": np.full(2 * len(t), 50 * 2**20, dtype="int64"),
        })
        res.to_parquet(final / "resources.parquet", index=False)
        if hlog:
            write_hlog(final / "latency.hlog", {"total": y99 / 3, "GET /echo": y99 / 3},
                       duration_s, rng)
        if samples:
            n = 2000
            lat_us = rng.lognormal(math.log(y99 / 3 * 1e3), 0.45, n)
            pd.DataFrame({
                "t_ns": np.sort(rng.integers(0, duration_s * 10**9, n)).astype("int64"),
                "operation": ["Echo"] * n,
                "latency_us": lat_us,
                "service_time_us": lat_us * 0.9,
                "status": ["ok"] * n,
            }).to_parquet(final / "samples.parquet", index=False)
    return root


def write_hlog(path: Path, medians_ms: dict[str, float], seconds: int,
               rng: np.random.Generator) -> None:
    """An HdrHistogram interval log as RESULTS.md describes it: one interval per
    second per operation, values in microseconds, tags with spaces as '_'."""
    from hdrh.histogram import HdrHistogram

    lines = ["#[StartTime: 1767323045.000 (seconds since epoch)]",
             "#[BaseTime: 1767323045.000 (seconds since epoch)]",
             '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"']
    for s in range(seconds):
        for op, median in medians_ms.items():
            h = HdrHistogram(1, 60_000_000, 3)
            for v in rng.lognormal(math.log(median * 1e3), 0.45, 200):
                h.record_value(int(v))
            tag = op.replace(" ", "_").replace(",", "_")
            lines.append(f"Tag={tag},{s:.3f},1.000,{h.get_max_value() / 1e3:.3f},"
                         + h.encode().decode("ascii"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
