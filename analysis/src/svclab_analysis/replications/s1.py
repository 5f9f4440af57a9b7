"""S1: which orchestrator settings matter under load (vertical, horizontal, HPA).

S1 reported throughput (fully served requests per second), mean response
time and failure rate, and Pearson correlations between each setting and
each metric. Here every run is one point: each correlation is over runs,
with Fisher's z interval (scipy's ``pearsonr(...).confidence_interval``),
and each configuration's metrics are means over runs with Student-t
intervals. compute → frozen dataclass → render, as the other studies.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..english import count
from ..formatting import md_table, pval
from .common import (
    CONFIDENCE,
    Claim,
    Ratio,
    Section,
    StudyData,
    Summary,
    ratio_cell,
    ratio_of,
    summarise,
    summary_cell,
)
from .common import verdict as ratio_verdict

METRIC = "mean_ms"  # the headline metric S1 reported beside throughput and failures

# The three metrics S1 used, as svclab's per-run columns.
METRICS = {"throughput_rps": "throughput (req/s)", "mean_ms": "mean latency (ms)",
           "error_rate_pct": "failure rate (%)"}

# S1's published numbers (SEEDS.md).
PAPER_HPA_R = {("cpu_target", "throughput_rps"): 0.48, ("memory_target", "throughput_rps"): 0.73,
               ("cpu_target", "mean_ms"): -0.57, ("memory_target", "mean_ms"): -0.68}
PAPER_HORIZONTAL = ("300 VU: 1 replica ≈ 590 ms and 135 req/s, 6 replicas ≈ 420 ms and 150 req/s, "
                    "11 replicas back to the 1-replica figures")
PAPER_VERTICAL = ("50 VU: ≈ 30 req/s at ≈ 32 ms (66 ms with the smallest allocation); 34% failed "
                  "at 400 VU and 74% at 800 VU, where response time fell")

_SIZE = re.compile(r"^\s*([0-9.]+)\s*([KMGT]i?B?|B)?\s*$", re.IGNORECASE)
_UNIT_MIB = {"": 1 / 2**20, "B": 1 / 2**20, "K": 1 / 1024, "KB": 1 / 1024, "KIB": 1 / 1024,
             "M": 1.0, "MB": 1.0, "MIB": 1.0, "G": 1024.0, "GB": 1024.0, "GIB": 1024.0,
             "T": 2.0**20, "TB": 2.0**20, "TIB": 2.0**20}


def numeric(level: str) -> float:
    """A factor level as a number: plain numbers as they are, sizes ("512MiB")
    in MiB; NaN when the level is not a quantity."""
    try:
        return float(level)
    except ValueError:
        pass
    m = _SIZE.match(level)
    if not m:
        return math.nan
    return float(m.group(1)) * _UNIT_MIB[(m.group(2) or "").upper()]


def short(factor: str) -> str:
    """deploy.autoscale.products.cpu_target → cpu_target; load.users → users."""
    return factor.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Correlation:
    factor: str
    metric: str
    n: int
    r: float
    lo: float
    hi: float
    p: float


@dataclass(frozen=True)
class Row:
    levels: tuple[str, ...]
    metrics: tuple[Summary, ...]  # in METRICS order


@dataclass(frozen=True)
class S1:
    """Everything one S1 region reports, computed from one results directory."""

    kind: str  # "vertical", "horizontal" or "hpa"
    factors: tuple[str, ...]
    rows: tuple[Row, ...]
    correlations: tuple[Correlation, ...]
    # horizontal: (peak level, largest level, largest ÷ peak throughput)
    overscale: tuple[str, str, Ratio] | None
    flagged: int
    runs: int


def correlate(x: np.ndarray, y: np.ndarray) -> tuple[int, float, float, float, float]:
    """Pearson's r over runs with its Fisher-z interval and p; NaN where
    undefined (fewer than four runs, or a constant side)."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    n = len(x)
    if n < 4 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return n, math.nan, math.nan, math.nan, math.nan
    res = stats.pearsonr(x, y)
    ci = res.confidence_interval(confidence_level=CONFIDENCE)
    return n, float(res.statistic), float(ci.low), float(ci.high), float(res.pvalue)


def compute(data: StudyData, kind: str) -> S1:
    ok = data.table("total")  # ok runs only
    factors = tuple(data.factors)
    rows: list[Row] = []
    for cell in itertools.product(*[list(data.factors[f]) for f in factors]):
        mask = np.ones(len(ok), dtype=bool)
        for f, lv in zip(factors, cell, strict=True):
            mask &= ok[f].astype(str).to_numpy() == lv
        part = ok[mask]
        rows.append(Row(tuple(cell), tuple(summarise(part[m].to_numpy(dtype=float))
                                           for m in METRICS)))
    corrs: list[Correlation] = []
    for f in factors:
        x = np.array([numeric(str(v)) for v in ok[f]], dtype=float)
        if not np.isfinite(x).any():
            continue
        for m in METRICS:
            n, r, lo, hi, p = correlate(x, ok[m].to_numpy(dtype=float))
            corrs.append(Correlation(f, m, n, r, lo, hi, p))
    over = None
    if kind == "horizontal" and factors:
        f = next((g for g in factors if ".replicas." in g), factors[0])
        order = sorted(data.factors[f], key=numeric)
        thr = {v: ok.loc[ok[f].astype(str) == v, "throughput_rps"].to_numpy(dtype=float)
               for v in order}
        means = {v: float(np.mean(t)) if len(t) else -math.inf for v, t in thr.items()}
        peak = max(order, key=lambda v: means[v])
        over = (peak, order[-1], ratio_of(thr[order[-1]], thr[peak]))
    runs = data.runs
    return S1(kind, factors, tuple(rows), tuple(corrs), over, int(runs["bottleneck"].sum()),
              len(runs))


def r_cell(c: Correlation) -> str:
    if not math.isfinite(c.r):
        return "—"
    return f"{c.r:+.2f} ({c.lo:+.2f} to {c.hi:+.2f})"


def targets_verdict(mem: Correlation, cpu: Correlation) -> str:
    """Whether the memory target matters more than the CPU target for one
    metric: its correlation's interval excludes 0 while the CPU target's
    does not (and the reverse for 'reversed')."""
    if not (math.isfinite(mem.lo) and math.isfinite(cpu.lo)):
        return "inconclusive (no interval)"
    mem_sig = mem.lo > 0 or mem.hi < 0
    cpu_sig = cpu.lo > 0 or cpu.hi < 0
    if mem_sig and not cpu_sig:
        return "holds"
    if cpu_sig and not mem_sig:
        return "does not hold (reversed)"
    if not mem_sig and not cpu_sig:
        return "does not hold (neither target's correlation is distinguishable from 0)"
    return "inconclusive (both targets matter)"


def render(r: S1) -> Section:
    claims: list[Claim] = []
    out: list[str] = []
    paper = {"vertical": PAPER_VERTICAL, "horizontal": PAPER_HORIZONTAL,
             "hpa": "Pearson r: throughput vs CPU target 0.48, vs memory target 0.73; "
                    "response time vs CPU target −0.57, vs memory target −0.68"}[r.kind]
    out.append(f"Paper: {paper}. svclab: means over runs with 95% Student-t intervals; "
               "throughput counts served requests only.")
    out.append("")
    heads = [short(f) for f in r.factors] + list(METRICS.values()) + ["runs"]
    rows = [[*row.levels, *(summary_cell(s) for s in row.metrics), str(row.metrics[0].n)]
            for row in r.rows]
    out.append(md_table(heads, rows))
    out.append("")
    if r.correlations:
        out.append("**Pearson correlations over runs** (r with its 95% Fisher-z interval; "
                   "sizes in MiB):")
        out.append("")
        crow = [[short(c.factor), METRICS[c.metric], r_cell(c), pval(c.p), str(c.n)]
                for c in r.correlations]
        out.append(md_table(["setting", "metric", "r (95% CI)", "p", "runs"], crow))
        out.append("")
    if r.kind == "horizontal" and r.overscale is not None:
        peak, top, ratio = r.overscale
        v = ratio_verdict(ratio.lo, ratio.hi, expect_above_one=False)
        if peak == top:
            v = "does not hold (throughput peaks at the largest replica count)"
        out.append(f"Throughput peaks at {count(peak, 'replica')}; at {top} it is "
                   f"{ratio_cell(ratio)} of the peak. Verdict on *over-scaling hurts*: **{v}**.")
        claims.append(Claim("S1", "over-scaling hurts", v,
                            f"{top} ÷ {peak} replicas throughput {ratio_cell(ratio)}",
                            "11 replicas fell back to 1 replica's figures"))
        out.append("")
    if r.kind == "hpa":
        by = {(short(c.factor), c.metric): c for c in r.correlations}
        verdicts = []
        for m in ("throughput_rps", "mean_ms"):
            mem, cpu = by.get(("memory_target", m)), by.get(("cpu_target", m))
            if mem is None or cpu is None:
                continue
            verdicts.append(f"{METRICS[m]}: {targets_verdict(mem, cpu)} "
                            f"(memory r {r_cell(mem)}, CPU r {r_cell(cpu)}; paper "
                            f"{PAPER_HPA_R[('memory_target', m)]:+.2f} and "
                            f"{PAPER_HPA_R[('cpu_target', m)]:+.2f})")
        if verdicts:
            out.append("Verdict on *memory targets matter more than CPU targets*: "
                       + "; ".join(verdicts) + ".")
            first = verdicts[0].split(": ", 1)[1].split(" (memory", 1)[0]
            claims.append(Claim("S1", "memory targets matter more than CPU targets", first,
                                "; ".join(v.split(" (memory")[0] for v in verdicts),
                                "r 0.73 vs 0.48 (throughput)"))
            out.append("")
    out.append(f"Runs flagged by the generator's self-audit: {r.flagged} of {r.runs}.")
    return Section("\n".join(out), tuple(claims))


def vertical_section(data: StudyData) -> Section:
    return render(compute(data, "vertical"))


def horizontal_section(data: StudyData) -> Section:
    return render(compute(data, "horizontal"))


def hpa_section(data: StudyData) -> Section:
    return render(compute(data, "hpa"))

