"""S0: granularity and placement under growing load."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..design import anova
from ..errors import AnalysisError
from ..formatting import est, md_table, num, pval
from .common import (
    Claim,
    Difference,
    Ratio,
    Section,
    StudyData,
    Summary,
    cell,
    difference_of,
    factor_levels,
    flagged,
    mean_or_nan,
    ratio_cell,
    ratio_of,
    summarise,
    summary_cell,
    values,
)

METRIC = "p95_ms"

# S0: p95 (ms) at the lowest and the highest load, per placement of the paper.
S0_PAPER: dict[str, tuple[float, float]] = {
    "a": (6, 17), "b": (6, 21), "c": (7, 21), "d": (8, 68),
    "e": (9, 63), "f": (11, 170), "g": (7, 30), "h": (8, 63),
}
S0_PAPER_NAMES: dict[str, str] = {
    "a": "monolith", "b": "frontend | rest co-located", "c": "two co-located groups",
    "d": "every service its own process", "e": "2 VMs: frontend | co-located",
    "f": "2 VMs: frontend | every service alone", "g": "2 VMs: one group per VM",
    "h": "2 VMs: every service alone, spread",
}
# Which of svclab's placements stands in for which of the paper's.
S0_PLACEMENT_MAP: dict[str, str] = {"monolith": "a", "two": "c", "split": "d"}


# The paper's (d) ÷ (a) and (c) ÷ (a) at its lowest and highest load.
S0_PAPER_D_LOW = S0_PAPER["d"][0] / S0_PAPER["a"][0]
S0_PAPER_D_HIGH = S0_PAPER["d"][1] / S0_PAPER["a"][1]
S0_PAPER_C_LOW = S0_PAPER["c"][0] / S0_PAPER["a"][0]
S0_PAPER_C_HIGH = S0_PAPER["c"][1] / S0_PAPER["a"][1]

Cell = tuple[str, str]  # (placement, users)


@dataclass(frozen=True)
class P95:
    """One placement at one user level: the runs' p95 over runs, and the median run."""

    summary: Summary
    median: float | None  # None when the cell has no runs


@dataclass(frozen=True)
class Versus:
    """A placement against the monolith at one user level."""

    ratio: Ratio  # p95 ÷ the monolith's
    difference: Difference  # mean p95 − the monolith's, ms


@dataclass(frozen=True)
class Load:
    """One placement at one user level: throughput, cost and the generator's CPU."""

    throughput: Summary
    cpu_ms: Summary  # CPU ms of the system under test per request
    system_cpu: float  # mean over runs of its CPU use, % of one core
    generator_cpu: float  # mean over runs, same unit
    flagged: int
    runs: int


@dataclass(frozen=True)
class S0:
    """Everything the S0 region reports, computed from one results directory."""

    placements: tuple[str, ...]
    users: tuple[str, ...]
    cores: int
    p95: dict[Cell, P95]
    versus: dict[str, tuple[Versus, ...]]  # per placement but the monolith, per user level
    finest: str | None  # the placement the verdicts judge
    low_verdict: str  # on "fine granularity costs little at low load"
    grow_verdict: str  # on "granularity's cost grows to dominate at high load"
    anova: pd.DataFrame | None  # type II on log(p95), when placement or users varied
    anova_error: str | None  # why `anova` is None when they did
    load: dict[Cell, Load]


def low_load_verdict(first: Ratio) -> str:
    """At the lowest load the penalty is as small as the paper's (d) ÷ (a)."""
    if not (math.isfinite(first.lo) and math.isfinite(first.hi)):
        return "inconclusive (no interval)"
    return "does not hold (larger)" if first.lo > S0_PAPER_D_LOW else "holds"


def growth_verdict(first: Ratio, last: Ratio) -> str:
    """The ratio grows with load: the intervals at the ends do not overlap."""
    if not all(math.isfinite(x) for x in (first.lo, first.hi, last.lo, last.hi)):
        return "inconclusive (no interval)"
    if last.lo > first.hi and last.lo > 1:
        return "holds"
    if last.hi < first.lo:
        return "does not hold (shrinks)"
    return "inconclusive (the intervals overlap)"


def compute(data: StudyData) -> S0:
    df = data.table()
    if "deploy.transport" in df.columns:
        # The paper compares placements on one RPC system: grpc's runs stand
        # in for it; protorpc's are a factor of svclab's own, not pooled in.
        df = df[df["deploy.transport"].astype(str) == "grpc"]
    placements = factor_levels(data, "deploy.placement", "monolith")
    users = factor_levels(data, "load.users", "1")

    def p95(pl: str, u: str) -> np.ndarray:
        return values(df, METRIC, **{"deploy.placement": pl, "load.users": u})

    cells = {(pl, u): p95(pl, u) for pl in placements for u in users}
    medians = {c: P95(summarise(x), float(np.median(x)) if len(x) else None)
               for c, x in cells.items()}
    versus: dict[str, tuple[Versus, ...]] = {}
    if "monolith" in placements and len(users) >= 2:
        versus = {pl: tuple(Versus(ratio_of(cells[(pl, u)], cells[("monolith", u)]),
                                   difference_of(cells[(pl, u)], cells[("monolith", u)]))
                            for u in users)
                  for pl in placements if pl != "monolith"}
    finest = "split" if "split" in versus else next(iter(versus), None)
    low_v = grow_v = ""
    if finest is not None:
        first, last = versus[finest][0].ratio, versus[finest][-1].ratio
        low_v, grow_v = low_load_verdict(first), growth_verdict(first, last)
    factors = [f for f in data.factors if f in ("deploy.placement", "load.users")]
    av: pd.DataFrame | None = None
    av_error: str | None = None
    if factors:
        try:
            av = anova(df, METRIC, factors, log=True)
        except AnalysisError as exc:
            av_error = str(exc)
    runs = data.runs.set_index("run_id")
    load: dict[Cell, Load] = {}
    for pl, u in cells:
        part = cell(df, **{"deploy.placement": pl, "load.users": u})
        ids = list(part["run_id"])
        dur = runs.loc[ids, "duration_s"].to_numpy(dtype=float)
        system = 100.0 * part["cpu_s"].to_numpy(dtype=float) / dur if len(part) else []
        load[(pl, u)] = Load(
            summarise(part["throughput_rps"].to_numpy(dtype=float)),
            summarise(part["cpu_s_per_1k"].to_numpy(dtype=float)),
            mean_or_nan(system),
            mean_or_nan(runs.loc[[r for r in ids if r in runs.index], "gen_cpu_percent"]),
            flagged(data.runs, part), len(part))
    return S0(placements, users, data.cores, medians, versus, finest, low_v, grow_v, av,
              av_error, load)


def render(r: S0) -> Section:
    """The region's Markdown (after the provenance) and the claims it tested."""
    claims: list[Claim] = []
    out = []
    out.append("**p95 latency (ms)** per placement and closed-loop users: the mean over runs of "
               "each run's p95, with a 95% Student-t interval over runs, and the median run "
               "(a run's p95 is outlier-prone: one stalled second moves it). Paper: Online "
               "Boutique on Service Weaver, p95 at its lowest → highest load (500 → 2250 "
               "users).")
    out.append("")
    rows = []
    for pl in r.placements:
        letter = S0_PLACEMENT_MAP.get(pl)
        paper = (f"({letter}) {S0_PAPER_NAMES[letter]}: {num(S0_PAPER[letter][0])} → "
                 f"{num(S0_PAPER[letter][1])}") if letter else "—"
        row = [pl, paper]
        for u in r.users:
            c = r.p95[(pl, u)]
            med = f"; median {num(c.median)}" if c.median is not None else ""
            row.append(summary_cell(c.summary) + med)
        rows.append(row)
    out.append(md_table(["placement", "paper: p95 low → high load (ms)",
                         *[f"{u} users" for u in r.users]], rows))
    out.append("")

    if r.versus:
        out.append("**Granularity's cost as load grows**: p95 of each placement ÷ the "
                   "monolith's, per user level (ratio of the run p95s' medians, 95% bootstrap "
                   "interval). Paper: (d) ÷ (a) "
                   f"{num(S0_PAPER_D_LOW)}× at low load, "
                   f"{num(S0_PAPER_D_HIGH)}× at high load; (c) ÷ (a) "
                   f"{num(S0_PAPER_C_LOW)}× and "
                   f"{num(S0_PAPER_C_HIGH)}×.")
        out.append("")
        rows = [[f"{pl} ÷ monolith", *[ratio_cell(v.ratio) for v in vs]]
                for pl, vs in r.versus.items()]
        rows += [[f"{pl} − monolith (ms)",
                  *[est(v.difference.diff, v.difference.lo, v.difference.hi) for v in vs]]
                 for pl, vs in r.versus.items()]
        out.append(md_table(["placement vs monolith", *[f"{u} users" for u in r.users]], rows))
        out.append("")
        out.append("*Differences: mean p95 of the placement minus the monolith's, with Welch's "
                   "95% interval.*")
        out.append("")
        if r.finest is not None:
            first, last = r.versus[r.finest][0].ratio, r.versus[r.finest][-1].ratio
            claims.append(Claim(
                "S0", "fine granularity costs little at low load", r.low_verdict,
                f"{r.finest} ÷ monolith p95 {ratio_cell(first)} at {r.users[0]} users",
                f"(d) ÷ (a) {num(S0_PAPER_D_LOW)}×"))
            claims.append(Claim(
                "S0", "granularity's cost grows to dominate at high load", r.grow_verdict,
                f"{r.finest} ÷ monolith p95 {ratio_cell(first)} → {ratio_cell(last)} "
                f"({r.users[0]} → {r.users[-1]} users)",
                f"(d) ÷ (a) {num(S0_PAPER_D_LOW)}× → {num(S0_PAPER_D_HIGH)}×"))
            out.append(f"Verdicts on *fine granularity costs little at low load* ({r.finest} ÷ "
                       f"monolith at {r.users[0]} users no larger than the paper's "
                       f"{num(S0_PAPER_D_LOW)}×): **{r.low_verdict}**; on *and dominates at "
                       f"high load* (the ratio at {r.users[-1]} users above 1 and above its "
                       f"value at {r.users[0]} users, intervals not overlapping): "
                       f"**{r.grow_verdict}**.")
            out.append("")

    if r.anova is not None:
        rows = [[("error (between runs)" if t["term"] == "Residual" else str(t["term"])),
                 str(int(t["df"])), num(t["percent"]), pval(t["p"])]
                for _, t in r.anova.iterrows()]
        out.append("**ANOVA on log(p95)** (type II): each term's share of the variation.")
        out.append("")
        out.append(md_table(["term", "df", "variation explained (%)", "p"], rows))
        out.append("")
    elif r.anova_error is not None:
        out.append(f"*ANOVA not computed: {r.anova_error}.*")
        out.append("")

    rows = [[pl, u, summary_cell(x.throughput), summary_cell(x.cpu_ms), num(x.system_cpu),
             num(x.generator_cpu), f"{x.flagged} of {x.runs}"] for (pl, u), x in r.load.items()]
    out.append(f"**Load and cost**: throughput, CPU ms of the system under test per request and "
               f"its CPU use (% of one core; the machine has {r.cores}), from resources.parquet; "
               "the generator's own CPU (same unit) and the runs its self-audit flagged.")
    out.append("")
    out.append(md_table(["placement", "users", "throughput (req/s)", "CPU ms per request",
                         "system CPU (%)", "generator CPU (%)", "flagged runs"], rows))
    return Section("\n".join(out), tuple(claims))


def section(data: StudyData) -> Section:
    return render(compute(data))
