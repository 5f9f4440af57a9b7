"""Tests of the mesh analyses (replications/s2mesh.py).

Stores are written with stores.write_store, then each run's resources.parquet
is replaced by one with roles, at CPU rates chosen so that the expected
numbers follow by hand; intervals are checked against scipy.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from stores import DURATION, write_store

from svclab_analysis.formatting import est, num
from svclab_analysis.replications import s2mesh
from svclab_analysis.replications.store import study_data
from svclab_analysis.results import load_experiment


def with_roles(d: Path, rates: dict[str, float], rss_mb: dict[str, float],
               per_run: Any = None, hosts: int = 2) -> None:
    """Replaces every run's resources with one process per role at `rates`
    CPU s/s (`hosts` host processes, one per hop, sharing the host rate)."""
    for rd in sorted((d / "runs").iterdir()):
        levels = json.loads((rd / "run.json").read_text())["levels"]
        rr = per_run(levels) if per_run else rates
        t = np.arange(-1.0, DURATION + 1.0)
        frames = []
        procs = [(f"hop{h + 1}", "host", rr["host"] / hosts) for h in range(hosts)]
        procs += [("loadgen", "loadgen", 5.0)]
        procs += [(f"{r}.p", r, v) for r, v in rr.items() if r not in ("host", "loadgen")]
        for i, (name, role, rate) in enumerate(procs):
            if rate != rate:  # NaN: no such process in this run
                continue
            frames.append(pd.DataFrame({
                "t_s": t, "process": name, "role": role,
                "pid": np.full(len(t), 10 + i, dtype="int64"),
                "cpu_s": 1.0 + rate * np.clip(t, -1, DURATION),
                "rss_bytes": np.full(len(t), int(rss_mb.get(role, 8) * 2**20), dtype="int64"),
            }))
        pd.concat(frames).to_parquet(rd / "resources.parquet", index=False)


def test_role_usage() -> None:
    t = np.arange(-1.0, 11.0)
    res = pd.DataFrame({
        "t_s": np.concatenate([t, t, t]),
        "process": ["a"] * 12 + ["b"] * 12 + ["loadgen"] * 12,
        "role": ["host"] * 12 + ["sidecar"] * 12 + ["loadgen"] * 12,
        "pid": [1] * 12 + [2] * 12 + [3] * 12,
        "cpu_s": np.concatenate([0.5 * t, 0.2 * t, 9 * t]),
        "rss_bytes": [2**20] * 12 + [3 * 2**20] * 12 + [2**30] * 12,
    })
    u = s2mesh.role_usage(res, 10.0).set_index("role")
    assert list(u.index) == ["host", "sidecar"]  # the generator is not the system
    # Samples at t = 0..10 inside the window: 10 s at the slope.
    assert u.loc["host", "cpu_s"] == 5.0
    assert abs(u.loc["sidecar", "cpu_s"] - 2.0) < 1e-12
    assert u.loc["sidecar", "rss_mb"] == 3.0


P50 = {"none": [1.0, 1.2, 1.4], "envoy": [2.0, 2.3, 2.6]}


def test_bench_table(tmp_path: Path) -> None:
    d = write_store(tmp_path, "bench-sidecar",
                    [("deploy.sidecar", ["none", "envoy"]), ("deploy.proxy_mode", ["sidecar"])],
                    lambda lv, rep: {"total": {"p50_ms": P50[lv["deploy.sidecar"]][rep - 1],
                                               "p90_ms": 2 * P50[lv["deploy.sidecar"]][rep - 1]}},
                    reps=3, rps=1000.0)
    # Two sidecars together at 0.6 CPU s/s; 40 MB each.
    with_roles(d, {}, {"sidecar": 40.0}, per_run=lambda lv: {
        "host": 0.8, "sidecar": 0.6 if lv["deploy.sidecar"] == "envoy" else float("nan")})
    data = study_data(load_experiment(d, metric="p50_ms"))
    costs, p50, _ = s2mesh.hop_costs(data)
    assert p50 == 1.2
    (c,) = costs
    # Two hosts, so hops = 2: a request passes 3 proxies.
    assert c.passes == 3
    diff = stats.ttest_ind(P50["envoy"], P50["none"], equal_var=False)
    ci = diff.confidence_interval(0.95)
    added = float(np.mean(P50["envoy"]) - np.mean(P50["none"]))  # 1.1 ms
    assert abs(c.added_p50.diff - added) < 1e-12
    assert abs(c.added_p50.lo - ci.low) < 1e-9 and abs(c.added_p50.hi - ci.high) < 1e-9
    # 0.6 vCPU for 1000 req/s × 3 passes = 0.2 vCPU per proxy per 1,000 req/s.
    assert abs(c.vcpu_per_1k - 0.2) < 1e-9
    # Both proxies' RSS summed (2 × 40 MB... one process per role here) over processes.
    assert c.mb_per_proxy == 40.0
    text = s2mesh.bench_table(data)
    # Per hop: two of the three passes.
    assert "| envoy | sidecar | 3 | 2.30 | 4.60 |" in text
    assert f"| {num(added * 2 / 3)} |" in text
    assert "| 2.65 |" in text and "| 0.350 |" in text


def mesh_mean(lv: dict[str, Any], rep: int) -> float:
    """Mean response time: default 10 ms; tracing +20 ms at 100 req/s with
    large payloads, +2 elsewhere; mTLS +1; run noise ±0.5."""
    base = 10.0
    if str(lv["deploy.tracing"]) != "0":
        big = lv["load.rate"] == 100 and lv["app.payload"] == "large"
        base += 20.0 if big else 2.0
    if lv["deploy.mtls"]:
        base += 1.0
    return base + (rep - 2) * 0.5


def test_s2mesh_section(tmp_path: Path) -> None:
    d = write_store(tmp_path, "s2-mesh",
                    [("load.rate", [10, 100]), ("app.payload", ["small", "large"]),
                     ("deploy.tracing", [0, 1.0]), ("deploy.mtls", [False, True])],
                    lambda lv, rep: {"total": {"mean_ms": mesh_mean(lv, rep)}}, reps=3)
    with_roles(d, {}, {}, per_run=lambda lv: {
        "host": 0.3 + (0.1 if str(lv["deploy.tracing"]) != "0" else 0),
        "sidecar": 0.2 + (0.05 if lv["deploy.mtls"] else 0)}, hosts=3)
    sec = s2mesh.section(study_data(load_experiment(d, metric="mean_ms")))
    text, claims = sec.text, sec.claims
    assert "observability + mTLS" in text
    # Allocation of variation, default vs mTLS: the setup effect is 0.5 ms on
    # every cell, noise ±0.5 per repetition; SS by hand.
    y = []
    setup = []
    for mtls in (False, True):
        for rate in (10, 100):
            for payload in ("small", "large"):
                for rep in (1, 2, 3):
                    y.append(mesh_mean({"deploy.tracing": 0, "deploy.mtls": mtls,
                                        "load.rate": rate, "app.payload": payload}, rep))
                    setup.append(mtls)
    ya = np.array(y)
    s = np.array(setup)
    ss_setup = len(ya) * (0.5 * (ya[s].mean() - ya[~s].mean())) ** 2
    share = 100 * ss_setup / ((ya - ya.mean()) ** 2).sum()
    mtls_block = text.split("default vs mTLS")[1]
    row = next(ln for ln in mtls_block.splitlines() if ln.startswith("| setup |"))
    assert [c.strip() for c in row.split("|")][3] == num(share)
    assert [c.strip() for c in row.split("|")][4] == "82.0"
    # Findings: tracing costs most at 100 req/s, large; mTLS adds 1 ms to
    # 10 (10 %, right at the edge: 11/10 = 1.10, and an interval around it).
    by_what = {c.claim: c for c in claims}
    assert by_what["tracing is the expensive feature at high rate with large payloads"].verdict \
        == "holds"
    assert "mTLS is nearly free at low volume (≤ 1.10×)" in by_what
    # CPU ms per request per hop: hosts 0.3 CPU s/s at 100 req/s over 3 hops = 1 ms.
    assert "| default | 100 | small | 1.00 (1.00–1.00) | 0.667 (0.667–0.667) |" in text


def proxyless_mean(lv: dict[str, Any], rep: int) -> float:
    """Proxyless mTLS adds 0.1 ms, sidecar mTLS 2 ms; ±0.05 ms per repetition."""
    base = 2.0 if lv["deploy.sidecar"] == "none" else 6.0
    adds = (0.1 if lv["deploy.sidecar"] == "none" else 2.0) if lv["deploy.mtls"] else 0.0
    return base + adds + 0.05 * (rep - 2)


def test_proxyless_section_with_the_rate_fixed(tmp_path: Path) -> None:
    # s2-mesh-proxyless.toml fixes load.rate: the table has no rate column.
    d = write_store(tmp_path, "s2-mesh-proxyless",
                    [("deploy.sidecar", ["none", "envoy"]), ("deploy.mtls", [False, True]),
                     ("app.payload", ["small"])],
                    lambda lv, rep: {"total": {"mean_ms": proxyless_mean(lv, rep)}}, reps=3)
    with_roles(d, {"host": 0.3, "sidecar": 0.2}, {}, hosts=3)
    sec = s2mesh.proxyless_section(study_data(load_experiment(d, metric="mean_ms")))
    (claim,) = sec.claims
    # Welch intervals: 0.1 ± t·0.05·sqrt(2/3) and 2.0 ± the same lie apart.
    assert claim.verdict == "holds"
    row = next(ln for ln in sec.text.splitlines() if "proxyless (the transport)" in ln)
    a = np.array([proxyless_mean({"deploy.sidecar": "none", "deploy.mtls": True}, r)
                  for r in (1, 2, 3)])
    b = np.array([proxyless_mean({"deploy.sidecar": "none", "deploy.mtls": False}, r)
                  for r in (1, 2, 3)])
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert est(a.mean() - b.mean(), ci.low, ci.high) in row


def test_separated() -> None:
    D = s2mesh.Difference
    assert s2mesh.separated(D(0.1, 0.0, 0.2), D(2.0, 1.5, 2.5)) == "holds"
    assert s2mesh.separated(D(2.0, 1.5, 2.5), D(0.1, 0.0, 0.2)) == "does not hold (reversed)"
    assert s2mesh.separated(D(0.1, 0.0, 1.6), D(2.0, 1.5, 2.5)).startswith("inconclusive")
    assert s2mesh.separated(D(0.1, math.nan, math.nan), D(2.0, 1.5, 2.5)).startswith(
        "inconclusive")
