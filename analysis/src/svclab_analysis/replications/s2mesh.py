"""S2 whole: what a service mesh's features cost on a three-hop chain.

``experiments/s2-mesh.toml`` runs S2's design with real Envoy sidecars:
setup {default, observability, mTLS} × rate {10, 100 req/s} × payload
{small, large}, r = 5. The setup is two spec keys, ``deploy.tracing`` (with
``deploy.metrics`` tied to it) and ``deploy.mtls``, so the full factorial
also holds the fourth cell, observability with mTLS, which the paper did not
run. This module gives the paper's two 2³ analyses (default vs
observability, default vs mTLS) with allocation of variation beside the
paper's percentages, and what the paper could not: the cost per hop of each
feature in CPU ms per request, split between the apps and their proxies
(resources.parquet's ``role`` column).

``experiments/s2-mesh-proxyless.toml`` compares mTLS done by the transport
itself (no sidecar) with mTLS between Envoy sidecars.

``scripts/bench/sidecar.sh`` measures one sidecar hop's added latency and
CPU beside Istio's published figures; ``main(["bench", DIR])`` prints its
table.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..design import factorial
from ..errors import AnalysisError
from ..formatting import est, md_table, num
from ..results import load_experiment, role_usage
from .common import (
    CONFIDENCE,
    Claim,
    Difference,
    Section,
    StudyData,
    difference_of,
    factor_levels,
    overall,
    ratio_cell,
    ratio_of,
    summarise,
    summary_cell,
    values,
    verdict,
)
from .s2 import S2_PAPER_DEFAULT, S2_PAPER_MTLS, S2_PAPER_OBSERVABILITY
from .store import study_data

METRIC = "mean_ms"

# Roles of resources.parquet (deploy.Role* in Go).
HOST, SIDECAR, NODE_PROXY = "host", "sidecar", "node-proxy"
PROXY_ROLES = (SIDECAR, NODE_PROXY)

# S2's allocation of variation (%), as FrF2 printed it (SEEDS.md).
S2_PAPER_AOV_OBSERVABILITY = {"setup": 13.2, "rate": 18.4, "payload": 20.3,
                              "setup:rate": 9.0, "setup:payload": 9.7,
                              "rate:payload": 19.8, "setup:rate:payload": 9.7}
S2_PAPER_AOV_MTLS = {"setup": 82.0, "payload": 3.0, "rate:payload": 4.3,
                     "setup:rate:payload": 6.1}

# Istio's published data-plane figures (istio.io performance pages):
# two sidecars (client and server) at 1,000 req/s, 1 KB, 16 connections,
# mTLS, Istio 1.10–1.16; ambient's ztunnels in 1.22.
ISTIO_SIDECARS_P90_MS = 2.65
ISTIO_PROXY_VCPU_PER_1K = 0.35
ISTIO_PROXY_MB_PER_1K = 40.0
ISTIO_AMBIENT_P90_MS = 0.17

SETUP = "setup"
SETUP_NAMES = {("off", "false"): "default", ("on", "false"): "observability",
               ("off", "true"): "mTLS", ("on", "true"): "observability + mTLS"}


# ---------------------------------------------------------------- costs by role

def run_costs(data: StudyData) -> pd.DataFrame:
    """One row per ok run: the factor levels, the latency metrics, requests
    served, and per role its CPU seconds, mean RSS (MB) and processes.

    Each run's resources.parquet is read here: the run tables hold CPU for
    the system as a whole, and the mesh's cost is the proxies' share."""
    df = data.table("total")
    runs = data.runs.set_index("run_id")
    extra = []
    for rid in df["run_id"]:
        r = runs.loc[rid]
        duration = float(r["duration_s"])
        path = f"{r['dir']}/resources.parquet"
        try:
            res = pd.read_parquet(path)
        except (OSError, ValueError):
            res = pd.DataFrame()
        row: dict[str, float] = {"run_id": rid}
        for _, u in role_usage(res, duration).iterrows():
            row[f"cpu_s_{u['role']}"] = u["cpu_s"]
            row[f"rss_mb_{u['role']}"] = u["rss_mb"]
            row[f"n_{u['role']}"] = u["processes"]
        extra.append(row)
    out = df.merge(pd.DataFrame(extra), on="run_id", how="left")
    out["requests"] = out["throughput_rps"] * out["run_id"].map(runs["duration_s"])
    for role in (HOST, SIDECAR, NODE_PROXY):
        if f"cpu_s_{role}" not in out.columns:
            out[f"cpu_s_{role}"] = math.nan
    out["cpu_s_proxy"] = out[[f"cpu_s_{r}" for r in PROXY_ROLES]].sum(axis=1, min_count=1)
    return out


def chain_hops(costs: pd.DataFrame) -> int:
    """The hops of a split chain: its host processes (3, S2's, when no run
    recorded roles)."""
    n = costs.get("n_" + HOST, pd.Series(dtype=float)).dropna()
    return int(n.median()) if len(n) else 3


# ---------------------------------------------------------------- the benchmark

@dataclass
class HopCost:
    """One proxy program and mode against no proxy, on the same chain."""

    sidecar: str
    mode: str
    runs: int
    p50_ms: float
    p90_ms: float
    added_p50: Difference  # whole request
    added_p90: Difference
    passes: int  # proxy passes per request
    vcpu_per_1k: float  # per proxy pass at 1,000 req/s
    mb_per_proxy: float
    rps: float


def hop_costs(data: StudyData) -> tuple[list[HopCost], float, float]:
    """Each (sidecar, proxy_mode) of a bench-sidecar store against sidecar = none.

    A request on a split chain of h hops passes 2h − 1 proxies: the entry's
    inbound listener, then each further hop's caller's outbound and callee's
    inbound listener. Returns the costs and the baseline's p50 and p90.
    """
    df = run_costs(data)
    hops = chain_hops(df)
    passes = 2 * hops - 1
    base = df[df["deploy.sidecar"].astype(str) == "none"]
    if base.empty:
        raise AnalysisError("no run with deploy.sidecar = none to compare with")
    out = []
    for (sc, mode), g in df.groupby(["deploy.sidecar", "deploy.proxy_mode"], observed=True):
        if str(sc) == "none":
            continue
        dur = g["run_id"].map(data.runs.set_index("run_id")["duration_s"]).astype(float)
        vcpu = g["cpu_s_proxy"] / dur
        through = g["throughput_rps"] * passes / 1000.0
        nproc = g[[c for c in ("n_sidecar", "n_node-proxy") if c in g.columns]].sum(axis=1)
        mb = g[[c for c in ("rss_mb_sidecar", "rss_mb_node-proxy") if c in g.columns]].sum(axis=1)
        out.append(HopCost(
            str(sc), str(mode), len(g), float(g["p50_ms"].median()), float(g["p90_ms"].median()),
            difference_of(g["p50_ms"].to_numpy(float), base["p50_ms"].to_numpy(float)),
            difference_of(g["p90_ms"].to_numpy(float), base["p90_ms"].to_numpy(float)),
            passes, float((vcpu / through).median()), float((mb / nproc).median()),
            float(g["throughput_rps"].median())))
    return out, float(base["p50_ms"].median()), float(base["p90_ms"].median())


def bench_table(data: StudyData) -> str:
    costs, p50, p90 = hop_costs(data)
    rows = []
    for c in costs:
        hop = 2 / c.passes  # one hop = two proxy passes, Istio's "client and server proxies"
        istio = ISTIO_AMBIENT_P90_MS if c.mode == "node" else ISTIO_SIDECARS_P90_MS
        rows.append([c.sidecar, c.mode, str(c.runs), num(c.p50_ms), num(c.p90_ms),
                     est(c.added_p50.diff, c.added_p50.lo, c.added_p50.hi),
                     num(c.added_p50.diff * hop), num(c.added_p90.diff * hop),
                     num(istio), num(c.vcpu_per_1k), num(ISTIO_PROXY_VCPU_PER_1K),
                     num(c.mb_per_proxy), num(ISTIO_PROXY_MB_PER_1K), num(c.rps)])
    head = (f"No proxy: p50 {num(p50)} ms, p90 {num(p90)} ms. A request passes "
            f"{costs[0].passes if costs else '?'} proxies; one hop is two of them (the "
            "caller's and the callee's), as in Istio's figures.")
    return head + "\n\n" + md_table(
        ["proxy", "mode", "runs", "p50 ms", "p90 ms",
         "added p50, whole request (mean over runs, 95% CI)", "added p50 per hop",
         "added p90 per hop", "Istio: added p90 per hop",
         "vCPU per proxy per 1,000 req/s", "Istio", "MB per proxy", "Istio", "req/s"], rows)


# ---------------------------------------------------------------- S2 whole

def with_setup(df: pd.DataFrame) -> pd.DataFrame:
    """Adds the setup column (default, observability, mTLS, both) from the
    tracing and mtls levels."""
    out = df.copy()
    tracing = out.get("deploy.tracing", pd.Series("0", index=out.index)).astype(str)
    mtls = out.get("deploy.mtls", pd.Series("false", index=out.index)).astype(str)
    on = np.where(tracing.map(lambda v: float(v) > 0), "on", "off")
    out[SETUP] = [SETUP_NAMES[(t, m)] for t, m in zip(on, mtls, strict=True)]
    return out


def _aov_rows(df: pd.DataFrame, metric: str, setup: str,
              paper: dict[str, float]) -> list[list[str]]:
    sub = df[df[SETUP].isin(["default", setup])].copy()
    sub[SETUP] = pd.Categorical(sub[SETUP], categories=["default", setup], ordered=True)
    fit = factorial(sub, metric, [SETUP, "load.rate", "app.payload"], confidence=CONFIDENCE)
    short = {SETUP: "setup", "load.rate": "rate", "app.payload": "payload"}
    rows = []
    for _, t in fit.terms.iterrows():
        term = str(t["term"])
        if term == "Intercept":
            continue
        if term == "Residual":
            rows.append(["error (between runs)", "—", num(t["percent"]), "—"])
            continue
        name = ":".join(short.get(p, p) for p in term.split(":"))
        rows.append([name, est(t["effect"], t["ci_low"], t["ci_high"]), num(t["percent"]),
                     num(paper.get(name, math.nan)) if name in paper else "< 1"])
    return rows


def paper_ratio(setup: dict[tuple[int, str], float], rate: int, payload: str) -> float:
    """A setup's mean response time over the default's, in the paper."""
    return setup[(rate, payload)] / S2_PAPER_DEFAULT[(rate, payload)]


def section(data: StudyData) -> Section:
    """S2 whole: the setups' table, the findings, the two 2³ analyses, and
    each feature's CPU per hop."""
    metric = METRIC
    claims: list[Claim] = []
    costs = run_costs(data)
    df = with_setup(costs)
    rates = factor_levels(data, "load.rate", "10")
    payloads = factor_levels(data, "app.payload", "small")
    hops = chain_hops(costs)
    setups = [s for s in ("default", "observability", "mTLS", "observability + mTLS")
              if (df[SETUP] == s).any()]
    out: list[str] = []
    out.append(f"**Mean response time (ms)** of the {hops}-hop chain, each hop its own process "
               "with its own Envoy sidecar. Paper: Istio, 5 runs of 5 minutes; svclab: the "
               "mean over runs of each run's mean, 95% Student-t interval over runs.")
    out.append("")
    papers = {"default": S2_PAPER_DEFAULT, "observability": S2_PAPER_OBSERVABILITY,
              "mTLS": S2_PAPER_MTLS}
    rows = []
    for payload in payloads:
        for rate in rates:
            key = (int(float(rate)), payload)
            row = [f"{rate} req/s, {payload}"]
            for s in setups:
                v = summarise(values(df, metric, **{"load.rate": rate, "app.payload": payload,
                                                     SETUP: s}))
                paper = papers.get(s, {}).get(key, math.nan)
                row.append(f"{summary_cell(v)} (paper {num(paper)})" if s in papers
                           else summary_cell(v))
            rows.append(row)
    out.append(md_table(["rate, payload", *setups], rows))
    out.append("")

    # The paper's two findings.
    obs_v: list[str] = []
    obs_r = {}
    for payload in payloads:
        for rate in rates:
            fixed = {"load.rate": rate, "app.payload": payload}
            obs_r[(rate, payload)] = ratio_of(
                values(df, metric, **fixed, **{SETUP: "observability"}),
                values(df, metric, **fixed, **{SETUP: "default"}))
    rows = []
    for (rate, payload), r in obs_r.items():
        key = (int(float(rate)), payload)
        paper = S2_PAPER_OBSERVABILITY.get(key, math.nan) / S2_PAPER_DEFAULT.get(key, math.nan)
        rows.append(["observability ÷ default", f"{rate} req/s, {payload}", f"{num(paper)}×",
                     ratio_cell(r)])
    mtls_low: list[str] = []
    for payload in payloads:
        for rate in rates:
            fixed = {"load.rate": rate, "app.payload": payload}
            r = ratio_of(values(df, metric, **fixed, **{SETUP: "mTLS"}),
                         values(df, metric, **fixed, **{SETUP: "default"}))
            key = (int(float(rate)), payload)
            paper = S2_PAPER_MTLS.get(key, math.nan) / S2_PAPER_DEFAULT.get(key, math.nan)
            rows.append(["mTLS ÷ default", f"{rate} req/s, {payload}", f"{num(paper)}×",
                         ratio_cell(r)])
            if rate == rates[0]:
                # "Nearly free": the interval reaches no higher than 1.10.
                mtls_low.append("inconclusive (no interval)" if not math.isfinite(r.hi) else
                                "holds" if r.hi <= 1.10 else
                                "does not hold" if r.lo > 1.10 else "inconclusive")
    out.append("**The paper's findings as ratios** (ratio of the run means' medians, 95% "
               "bootstrap interval over runs).")
    out.append("")
    out.append(md_table(["ratio", "where", "paper", "svclab"], rows))
    out.append("")
    if obs_r:
        finite = {k: r for k, r in obs_r.items() if math.isfinite(r.ratio)}
        if finite:
            top = max(finite, key=lambda k: finite[k].ratio)
            hi_key = (rates[-1], payloads[-1])
            found = verdict(obs_r[hi_key].lo, obs_r[hi_key].hi, True)
            if found == "holds" and top != hi_key:
                found = "does not hold (tracing costs most elsewhere)"
            obs_v.append(found)
            claims.append(Claim(
                "S2", "tracing is the expensive feature at high rate with large payloads",
                overall(obs_v), f"observability ÷ default at {hi_key[0]} req/s, {hi_key[1]}: "
                f"{ratio_cell(obs_r[hi_key])}",
                f"{num(paper_ratio(S2_PAPER_OBSERVABILITY, 100, 'large'))}×"))
    if mtls_low:
        claims.append(Claim("S2", "mTLS is nearly free at low volume (≤ 1.10×)",
                            overall(mtls_low), f"at {rates[0]} req/s, see the table",
                            f"{num(paper_ratio(S2_PAPER_MTLS, 10, 'small'))}–"
                            f"{num(paper_ratio(S2_PAPER_MTLS, 10, 'large'))}×"))

    for setup, paper_aov in (("observability", S2_PAPER_AOV_OBSERVABILITY),
                             ("mTLS", S2_PAPER_AOV_MTLS)):
        out.append(f"**Allocation of variation, default vs {setup}** (2³ r, linear scale, as "
                   "the paper's FrF2 analysis).")
        out.append("")
        try:
            out.append(md_table(["term", "effect q, ms (95% CI)", "svclab (%)", "paper (%)"],
                                _aov_rows(df, metric, setup, paper_aov)))
        except AnalysisError as exc:
            out.append(f"*Not computed: {exc}.*")
        out.append("")

    out.append("**Cost per hop of each feature** in CPU ms per request per hop (the "
               "apps' hosts and their sidecars apart, from resources.parquet's role column), "
               "and the difference from the default setup, means over runs with 95% "
               "intervals.")
    out.append("")
    out.append(md_table(["setup", "rate", "payload", "hosts", "sidecars", "total",
                         "total − default"], feature_cost_rows(df, hops, setups, rates, payloads)))
    return Section("\n".join(out), tuple(claims))


def per_hop_ms(df: pd.DataFrame, column: str, hops: int) -> pd.Series:
    """CPU ms per request per hop of one role column, by run."""
    return 1000.0 * df[column] / df["requests"] / hops


def feature_cost_rows(df: pd.DataFrame, hops: int, setups: Sequence[str],
                      rates: Sequence[str], payloads: Sequence[str]) -> list[list[str]]:
    df = df.assign(host_ms=per_hop_ms(df, f"cpu_s_{HOST}", hops),
                   proxy_ms=per_hop_ms(df, "cpu_s_proxy", hops))
    df["total_ms"] = df["host_ms"] + df["proxy_ms"].fillna(0)
    rows = []
    for payload in payloads:
        for rate in rates:
            fixed = {"load.rate": rate, "app.payload": payload}
            base = values(df, "total_ms", **fixed, **{SETUP: "default"})
            for s in setups:
                cells = [summary_cell(summarise(values(df, c, **fixed, **{SETUP: s})))
                         for c in ("host_ms", "proxy_ms", "total_ms")]
                d = difference_of(values(df, "total_ms", **fixed, **{SETUP: s}), base)
                diff = "—" if s == "default" else est(d.diff, d.lo, d.hi)
                rows.append([s, rate, payload, *cells, diff])
    return rows


def separated(less: Difference, more: Difference) -> str:
    """Whether `less` lies below `more`, judged on their intervals."""
    if not all(math.isfinite(x) for x in (less.lo, less.hi, more.lo, more.hi)):
        return "inconclusive (no interval)"
    if less.hi < more.lo:
        return "holds"
    if less.lo > more.hi:
        return "does not hold (reversed)"
    return "inconclusive (the intervals overlap)"


def proxyless_section(data: StudyData) -> Section:
    """mTLS by the transport itself (sidecar none) against mTLS between
    Envoy sidecars: what each adds to plaintext in the same placement."""
    metric = METRIC
    claims: list[Claim] = []
    df = run_costs(data)
    hops = chain_hops(df)
    out: list[str] = []
    out.append(f"**Proxyless against sidecar mTLS** on the {hops}-hop chain: the mean response "
               "time, what mTLS adds to the same data path without it, and CPU ms per "
               "request per hop (hosts and sidecars together).")
    out.append("")
    rows = []
    adds: dict[str, list[Difference]] = {}
    for payload in factor_levels(data, "app.payload", "small"):
        for rate in factor_levels(data, "load.rate", "100"):
            for sc in factor_levels(data, "deploy.sidecar", "none"):
                # A key the spec fixed is no column of the table: filter on factors only.
                fixed = {k: v for k, v in {"load.rate": rate, "app.payload": payload,
                                           "deploy.sidecar": sc}.items() if k in df.columns}
                on = values(df, metric, **fixed, **{"deploy.mtls": "true"})
                off = values(df, metric, **fixed, **{"deploy.mtls": "false"})
                cpu = df.assign(ms=1000.0 * (df[f"cpu_s_{HOST}"] + df["cpu_s_proxy"].fillna(0))
                                / df["requests"] / hops)
                d = difference_of(on, off)
                adds.setdefault(sc, []).append(d)
                rows.append([f"{rate} req/s, {payload}",
                             "proxyless (the transport)" if sc == "none" else f"{sc} sidecars",
                             summary_cell(summarise(off)), summary_cell(summarise(on)),
                             est(d.diff, d.lo, d.hi),
                             summary_cell(summarise(values(cpu, "ms", **fixed,
                                                           **{"deploy.mtls": "true"})))])
    out.append(md_table(["rate, payload", "mTLS by", "plaintext (ms)", "mTLS (ms)",
                         "mTLS adds (ms)", "CPU ms per request per hop, mTLS"], rows))
    if "none" in adds and len(adds) > 1:
        # Per cell and sidecar: holds when what proxyless mTLS adds lies wholly
        # below what sidecar mTLS adds (Welch intervals apart), fails when wholly
        # above; overlapping intervals settle nothing.
        verdicts = [separated(p, q) for k, v in adds.items() if k != "none"
                    for p, q in zip(adds["none"], v, strict=True)]
        claims.append(Claim("S2", "proxyless mTLS adds less than sidecar mTLS",
                            overall(verdicts), "see the table", "not measured"))
    return Section("\n".join(out), tuple(claims))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m svclab_analysis.replications.s2mesh",
                                description="tables of the mesh experiments")
    p.add_argument("what", choices=["bench", "s2mesh", "proxyless"])
    p.add_argument("results", help="a results directory")
    a = p.parse_args(argv)
    try:
        data = study_data(load_experiment(a.results, metric=METRIC, operation="total"))
        text = {"bench": bench_table, "s2mesh": lambda d: section(d).text,
                "proxyless": lambda d: proxyless_section(d).text}[a.what](data)
    except AnalysisError as exc:
        print(f"s2mesh: {exc}", file=sys.stderr)
        return 1
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
