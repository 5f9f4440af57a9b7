"""S2: payload and rate on a three-hop chain (the mesh comes later)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from ..design import Factorial, factorial
from ..english import count
from ..errors import AnalysisError
from ..formatting import est, md_table, num
from .common import (
    AUDIT_HEADER,
    CONFIDENCE,
    Audit,
    Claim,
    Ratio,
    Section,
    StudyData,
    Summary,
    audit,
    audit_cells,
    cell,
    factor_levels,
    overall,
    ratio_cell,
    ratio_of,
    summarise,
    summary_cell,
    values,
    verdict,
)

METRIC = "mean_ms"

# S2: mean response time (ms) of the default Istio setup, by (rate, payload).
S2_PAPER_DEFAULT: dict[tuple[int, str], float] = {
    (10, "small"): 11.7, (100, "small"): 10.7, (10, "large"): 23.3, (100, "large"): 18.2,
}
S2_PAPER_OBSERVABILITY: dict[tuple[int, str], float] = {
    (10, "small"): 12.6, (100, "small"): 60.3, (10, "large"): 24.2, (100, "large"): 292.3,
}
S2_PAPER_MTLS: dict[tuple[int, str], float] = {
    (10, "small"): 11.9, (100, "small"): 9.9, (10, "large"): 22.2, (100, "large"): 29.3,
}


# The paper's default setup, as ratios: large ÷ small per rate, 100 ÷ 10 req/s per payload.
S2_PAPER_PAYLOAD = {rate: S2_PAPER_DEFAULT[(rate, "large")] / S2_PAPER_DEFAULT[(rate, "small")]
                    for rate in (10, 100)}
S2_PAPER_RATE = {payload: S2_PAPER_DEFAULT[(100, payload)] / S2_PAPER_DEFAULT[(10, payload)]
                 for payload in ("small", "large")}
S2_FACTORS = ("load.rate", "app.payload", "deploy.transport")

Cell = tuple[str, str, str]  # (rate, payload, transport)


def paper_default(levels: dict[str, str]) -> float:
    """The paper's default setup at a rate and payload; NaN where it has none."""
    return S2_PAPER_DEFAULT.get((int(float(levels["load.rate"])), levels["app.payload"]),
                                math.nan)


@dataclass(frozen=True)
class LevelRatio:
    """One factor's top level ÷ its bottom level, the others held fixed, and the verdict."""

    top: str
    bottom: str
    transport: str  # held fixed
    level: str  # of the other factor (the rate or the payload), held fixed
    paper: float  # the paper's default setup, same ratio; NaN where it has none
    ratio: Ratio
    verdict: str


@dataclass(frozen=True)
class S2:
    """Everything the S2 region reports, computed from one results directory."""

    closed_loop: bool
    rates: tuple[str, ...]
    payloads: tuple[str, ...]
    transports: tuple[str, ...]
    means: dict[Cell, Summary]
    payload_ratios: tuple[LevelRatio, ...]  # large ÷ small, per transport and rate
    rate_ratios: tuple[LevelRatio, ...]  # high ÷ low rate, per transport and payload
    payload_verdict: str  # over every payload ratio
    rate_verdict: str
    payload_range: tuple[float, float] | None  # min and max payload ratio
    rate_range: tuple[float, float] | None
    factors: tuple[str, ...]  # the varied keys the 2^k r fit crosses
    fit: Factorial | None
    fit_error: str | None  # why `fit` is None when there are factors
    audits: dict[Cell, Audit]


def level_ratios(df: pd.DataFrame, key: str, levels: Sequence[str], other: str,
                 others: Sequence[str], transports: Sequence[str],
                 judge: Callable[[Ratio], str]) -> tuple[LevelRatio, ...]:
    """`key`'s second level ÷ its first, per transport and level of `other`, with the
    paper's default setup's same ratio and the verdict `judge` gives; none unless
    `key` has two levels."""
    if len(levels) != 2:
        return ()
    bottom, top = levels
    out = []
    for tr in transports:
        for o in others:
            hi = {key: top, other: o, "deploy.transport": tr}
            lo = {key: bottom, other: o, "deploy.transport": tr}
            r = ratio_of(values(df, METRIC, **hi), values(df, METRIC, **lo))
            out.append(LevelRatio(top, bottom, tr, o, paper_default(hi) / paper_default(lo), r,
                                  judge(r)))
    return tuple(out)


def payload_verdict(r: Ratio) -> str:
    """A large payload costs more: the interval lies above 1."""
    return verdict(r.lo, r.hi, True)


def rate_verdict(r: Ratio) -> str:
    """The paper's default setup did not slow down at 100 req/s: the claim holds
    unless the interval lies wholly above 1."""
    if not math.isfinite(r.lo):
        return "inconclusive (no interval)"
    return "does not hold (slower at the higher rate)" if r.lo > 1 else "holds"


def ratio_range(rs: tuple[LevelRatio, ...]) -> tuple[float, float] | None:
    return (min(r.ratio.ratio for r in rs), max(r.ratio.ratio for r in rs)) if rs else None


def compute(data: StudyData) -> S2:
    df = data.table()
    rates = factor_levels(data, "load.rate", "10")
    payloads = factor_levels(data, "app.payload", "small")
    transports = factor_levels(data, "deploy.transport", "grpc")
    cells = [(rate, payload, tr) for payload in payloads for rate in rates for tr in transports]

    def where(c: Cell) -> dict[str, str]:
        return dict(zip(S2_FACTORS, c, strict=True))

    means = {c: summarise(values(df, METRIC, **where(c))) for c in cells}
    payload_ratios = level_ratios(df, "app.payload", payloads, "load.rate", rates, transports,
                                  payload_verdict)
    rate_ratios = level_ratios(df, "load.rate", rates, "app.payload", payloads, transports,
                               rate_verdict)
    factors = tuple(f for f in data.factors if f in S2_FACTORS)
    fit: Factorial | None = None
    fit_error: str | None = None
    if factors:
        try:
            fit = factorial(df, METRIC, list(factors), confidence=CONFIDENCE)
        except AnalysisError as exc:
            fit_error = str(exc)
    return S2(data.closed_loop, rates, payloads, transports, means,
              payload_ratios, rate_ratios,
              overall([r.verdict for r in payload_ratios]),
              overall([r.verdict for r in rate_ratios]),
              ratio_range(payload_ratios), ratio_range(rate_ratios),
              factors, fit, fit_error,
              {c: audit(data, cell(df, **where(c))) for c in cells})


def render(r: S2) -> Section:
    """The region's Markdown (after the provenance) and the claims it tested."""
    claims: list[Claim] = []
    out = []
    out.append("**Mean response time (ms)** of the three-hop chain. Paper: Istio's default "
               "setup, 5 runs of 5 minutes. svclab: no mesh (the mesh factor comes later), "
               "one column per transport; the mean over runs of each run's mean, with a 95% "
               "Student-t interval over runs.")
    out.append("")
    rows = []
    for payload in r.payloads:
        for rate in r.rates:
            key = (int(float(rate)), payload)
            row = [f"{rate} req/s, {payload}", num(S2_PAPER_DEFAULT.get(key, math.nan))]
            for tr in r.transports:
                s = r.means[(rate, payload, tr)]
                row.append(f"{summary_cell(s)}, {count(s.n, 'run')}")
            row += [num(S2_PAPER_OBSERVABILITY.get(key, math.nan)),
                    num(S2_PAPER_MTLS.get(key, math.nan))]
            rows.append(row)
    out.append(md_table(["rate, payload", "paper: default",
                         *[f"svclab: {t}" for t in r.transports],
                         "paper: observability", "paper: mTLS"], rows))
    out.append("")

    out.append("**Effects as ratios** (ratio of the run means' medians, 95% bootstrap interval "
               "over runs). The paper's default setup: large ÷ small "
               f"{num(S2_PAPER_PAYLOAD[10])}× at 10 req/s and "
               f"{num(S2_PAPER_PAYLOAD[100])}× at 100; 100 ÷ 10 req/s "
               f"{num(S2_PAPER_RATE['small'])}× (small) and "
               f"{num(S2_PAPER_RATE['large'])}× (large).")
    out.append("")
    rows = [[f"{x.top} ÷ {x.bottom}", f"{x.transport}, {x.level} req/s", f"{num(x.paper)}×",
             ratio_cell(x.ratio), x.verdict] for x in r.payload_ratios]
    rows += [[f"{x.top} ÷ {x.bottom} req/s", f"{x.transport}, {x.level}", f"{num(x.paper)}×",
              ratio_cell(x.ratio), x.verdict] for x in r.rate_ratios]
    out.append(md_table(["ratio", "where", "paper (default)", "svclab", "claim holds?"], rows))
    out.append("")
    if r.payload_range is not None:
        claims.append(Claim(
            "S2", "a large payload costs more than a small one", r.payload_verdict,
            f"large ÷ small {num(r.payload_range[0])}–{num(r.payload_range[1])}×",
            f"{num(S2_PAPER_PAYLOAD[100])}–{num(S2_PAPER_PAYLOAD[10])}×"))
    if r.rate_range is not None:
        failing = [f"{x.transport}, {x.level} ({ratio_cell(x.ratio)})" for x in r.rate_ratios
                   if x.verdict.startswith("does not hold")]
        claims.append(Claim(
            "S2", "the default setup is no slower at 100 than at 10 req/s", r.rate_verdict,
            "100 ÷ 10 req/s: slower for " + ", ".join(failing) if failing else
            f"100 ÷ 10 req/s {num(r.rate_range[0])}–{num(r.rate_range[1])}×",
            f"{num(S2_PAPER_RATE['large'])}–{num(S2_PAPER_RATE['small'])}×"))
    out.append("Claims tested: *a large payload costs more than a small one* (holds when the "
               "interval lies above 1); *without a mesh's tracing, 100 req/s is no slower than "
               "10 req/s* (holds unless the interval lies wholly above 1).")
    out.append("")

    if r.factors:
        out.append("**Allocation of variation** of the mean response time (2^k r, linear scale "
                   "as the paper's FrF2 analysis). The paper's shares are for setup × rate × "
                   "payload; svclab's setup factor is the transport until the mesh lands, so "
                   "only the rate, payload and rate × payload rows are comparable in kind.")
        out.append("")
        if r.fit is not None:
            rows = []
            for _, t in r.fit.terms.iterrows():
                if t["term"] == "Intercept":
                    continue
                name = "error (between runs)" if t["term"] == "Residual" else str(t["term"])
                eff = "—" if t["term"] == "Residual" else est(t["effect"], t["ci_low"],
                                                              t["ci_high"])
                rows.append([name, eff, num(t["percent"])])
            out.append(md_table(["term", "effect q, ms (95% CI)", "variation explained (%)"],
                                rows))
            out.append("")
            out.append("Paper, default vs observability: setup 13.2%, rate 18.4%, payload 20.3%, "
                       "setup×rate 9.0%, setup×payload 9.7%, rate×payload 19.8%, all three 9.7%. "
                       "Default vs mTLS: setup 82.0%, payload 3.0%, rate×payload 4.3%, all three "
                       "6.1%, the rest under 1%.")
        else:
            out.append(f"*Not computed: {r.fit_error}.*")
        out.append("")

    out.append("**Cost and the generator's self-audit** per configuration: CPU ms of the "
               "system under test per request (resources.parquet) and the median service time "
               "(from the actual send), as means over runs with 95% intervals; the generator's "
               "CPU, the share of sends more than 1 ms late, the worst run's send lag p99, and "
               "the runs the self-audit flagged.")
    out.append("")
    rows = [[f"{rate} req/s, {payload}, {tr}", *audit_cells(a, r.closed_loop)]
            for (rate, payload, tr), a in r.audits.items()]
    out.append(md_table(["configuration", *AUDIT_HEADER], rows))
    return Section("\n".join(out), tuple(claims))


def section(data: StudyData) -> Section:
    return render(compute(data))
