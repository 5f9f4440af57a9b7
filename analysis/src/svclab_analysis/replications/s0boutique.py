"""S0 whole: Online Boutique in S0's eight placements, on one emulated host and on two.

The one-host placements (a)-(d), and (g)'s grouping on one host, are one
experiment (experiments/s0-boutique.toml); each two-host placement (e)-(h)
is its own (experiments/s0-boutique-{e,f,g,h}.toml), because a placement
and its hosts change together and a factor varies one key. This study reads
the one-host experiment as its own and the two-host ones as companions
(StudyData.companions), and puts all nine rows in one table beside the
paper's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..formatting import md_table, num
from .common import (
    Claim,
    Ratio,
    Section,
    StudyData,
    Summary,
    cell,
    factor_levels,
    flagged,
    overall,
    ratio_cell,
    ratio_of,
    summarise,
    summary_cell,
    verdict,
)
from .s0 import S0_PAPER, S0_PAPER_NAMES, growth_verdict, low_load_verdict

METRIC = "p95_ms"
ONE_HOST = "s0-boutique"
# The two-host experiments, by the placement each runs.
TWO_HOSTS: dict[str, str] = {p: f"s0-boutique-{p}" for p in "efgh"}
# (g)'s grouping run on one host: the one-host spec's "g", relabelled so
# that it does not mix with the two-host (g).
G_ONE_HOST = "g1"

LABELS: dict[str, str] = {**{p: f"({p}) {S0_PAPER_NAMES[p]}" for p in S0_PAPER},
                          G_ONE_HOST: "(g)'s groups on one host"}

# The paper's (e) ÷ (b): the same groups, with the frontend on a second VM.
S0_PAPER_E_B_HIGH = S0_PAPER["e"][1] / S0_PAPER["b"][1]

Cell = tuple[str, str]  # (placement label, users)


@dataclass(frozen=True)
class Row:
    """One placement at one user level over its runs."""

    p95: Summary
    throughput: Summary
    errors_pct: float  # mean over runs of the failed requests, %
    flagged: int
    runs: int


@dataclass(frozen=True)
class Boutique:
    placements: tuple[str, ...]  # labels, one-host first
    users: tuple[str, ...]
    rows: dict[Cell, Row]
    versus_a: dict[str, tuple[Ratio, ...]]  # p95 ÷ (a)'s, per user level
    missing: tuple[str, ...]  # two-host placements with no results
    claims: tuple[Claim, ...]


def combine(data: StudyData) -> pd.DataFrame:
    """Every run's row of every experiment, with `placement` the label of its placement."""
    one = data.table().copy()
    one["placement"] = one["deploy.placement"].astype(str).replace({"g": G_ONE_HOST})
    parts = [one]
    for letter, name in TWO_HOSTS.items():
        comp = data.companions.get(name)
        if comp is None:
            continue
        t = comp.table().copy()
        t["placement"] = letter
        parts.append(t)
    df = pd.concat(parts, ignore_index=True)
    df["load.users"] = df["load.users"].astype(str)
    return df


def _runs(data: StudyData) -> pd.DataFrame:
    parts = [data.runs, *(c.runs for c in data.companions.values())]
    return pd.concat(parts, ignore_index=True)


def _against(x: np.ndarray, others: Mapping[str, np.ndarray], below: bool) -> tuple[str, str]:
    """Whether x's median lies above (below) every other's, with the ratios as evidence."""
    vs = {k: ratio_of(x, v) for k, v in others.items() if len(v)}
    if not len(x) or not vs:
        return "not tested", ""
    verdicts = [verdict(r.lo, r.hi, expect_above_one=not below) for r in vs.values()]
    return overall(verdicts), ", ".join(f"÷ ({k}) {ratio_cell(r)}" for k, r in vs.items())


def compute(data: StudyData) -> Boutique:
    df = combine(data)
    users = tuple(str(u) for u in factor_levels(data, "load.users", "1"))
    present = list(dict.fromkeys(df["placement"]))
    order = [p for p in ["a", "b", "c", "d", G_ONE_HOST, "e", "f", "g", "h"] if p in present]
    placements = tuple(order + [p for p in present if p not in order])
    runs = _runs(data)

    def p95(pl: str, u: str) -> np.ndarray:
        return cell(df, placement=pl, **{"load.users": u})[METRIC].to_numpy(dtype=float)

    rows: dict[Cell, Row] = {}
    for pl in placements:
        for u in users:
            part = cell(df, placement=pl, **{"load.users": u})
            rows[(pl, u)] = Row(
                summarise(part[METRIC].to_numpy(dtype=float)),
                summarise(part["throughput_rps"].to_numpy(dtype=float)),
                float(part["error_rate_pct"].mean()) if len(part) else math.nan,
                flagged(runs, part), len(part))
    versus: dict[str, tuple[Ratio, ...]] = {}
    if "a" in placements:
        versus = {pl: tuple(ratio_of(p95(pl, u), p95("a", u)) for u in users)
                  for pl in placements if pl != "a"}

    claims: list[Claim] = []
    lo_u, hi_u = users[0], users[-1]
    if "d" in versus:
        first, last = versus["d"][0], versus["d"][-1]
        claims.append(Claim(
            "S0", "Online Boutique: fine granularity costs little at low load",
            low_load_verdict(first), f"(d) ÷ (a) p95 {ratio_cell(first)} at {lo_u} users",
            f"(d) ÷ (a) {num(S0_PAPER['d'][0] / S0_PAPER['a'][0])}×"))
        claims.append(Claim(
            "S0", "Online Boutique: granularity's cost grows to dominate at high load",
            growth_verdict(first, last),
            f"(d) ÷ (a) {ratio_cell(first)} → {ratio_cell(last)} ({lo_u} → {hi_u} users)",
            f"(d) ÷ (a) {num(S0_PAPER['d'][0] / S0_PAPER['a'][0])}× → "
            f"{num(S0_PAPER['d'][1] / S0_PAPER['a'][1])}×"))
    if "e" in placements and "b" in placements:
        r = ratio_of(p95("e", hi_u), p95("b", hi_u))
        claims.append(Claim(
            "S0", "Online Boutique: a second VM costs at high load (same groups)",
            verdict(r.lo, r.hi, expect_above_one=True),
            f"(e) ÷ (b) p95 {ratio_cell(r)} at {hi_u} users",
            f"(e) ÷ (b) {num(S0_PAPER_E_B_HIGH)}×"))
    if "f" in placements:
        others = {p: p95(p, hi_u) for p in placements if p != "f"}
        v, here = _against(p95("f", hi_u), others, below=False)
        claims.append(Claim("S0", "Online Boutique: (f) is the worst placement at high load",
                            v, f"(f) at {hi_u} users {here}",
                            f"(f) {num(S0_PAPER['f'][1])} ms, the next {num(S0_PAPER['d'][1])}"))
    two = [p for p in "efh" if p in placements]
    if "g" in placements and two:
        v, here = _against(p95("g", hi_u), {p: p95(p, hi_u) for p in two}, below=True)
        claims.append(Claim("S0", "Online Boutique: (g) is the best of the two-VM placements",
                            v, f"(g) at {hi_u} users {here}",
                            f"(g) {num(S0_PAPER['g'][1])} ms, (e) and (h) "
                            f"{num(S0_PAPER['e'][1])}"))
    missing = tuple(p for p in TWO_HOSTS if p not in placements)
    return Boutique(placements, users, rows, versus, missing, tuple(claims))


def render(r: Boutique) -> Section:
    out = ["**p95 latency (ms)** of S0's scripted user per placement and closed-loop users: the "
           "mean over runs of each run's p95 (all requests of the flow), with a 95% Student-t "
           "interval over runs. Paper: Service Weaver's Online Boutique, p95 at its lowest → "
           "highest load (500 → 2250 Locust users on two 4-CPU VMs).", ""]
    if r.missing:
        out += [f"*No results yet for the two-host placement(s) "
                f"{', '.join(f'({p})' for p in r.missing)}: run "
                f"{', '.join(f'`experiments/{TWO_HOSTS[p]}.toml`' for p in r.missing)} "
                "(root needed).*", ""]
    rows = []
    for pl in r.placements:
        paper = (f"{num(S0_PAPER[pl][0])} → {num(S0_PAPER[pl][1])}" if pl in S0_PAPER else "—")
        rows.append([LABELS.get(pl, pl), paper,
                     *[summary_cell(r.rows[(pl, u)].p95) for u in r.users]])
    out.append(md_table(["placement", "paper p95 low → high (ms)",
                         *[f"{u} users" for u in r.users]], rows))
    out.append("")
    if r.versus_a:
        out += ["**Each placement ÷ the monolith (a)**: ratio of the run p95s' medians, 95% "
                "bootstrap interval. Paper at its lowest → highest load: "
                + "; ".join(f"({p}) {num(S0_PAPER[p][0] / S0_PAPER['a'][0])}× → "
                            f"{num(S0_PAPER[p][1] / S0_PAPER['a'][1])}×"
                            for p in "bcdefgh") + ".", ""]
        out.append(md_table(["placement", *[f"{u} users" for u in r.users]],
                            [[LABELS.get(p, p), *[ratio_cell(x) for x in vs]]
                             for p, vs in r.versus_a.items()]))
        out.append("")
    if r.claims:
        out.append("Verdicts (the summary table carries them too):")
        out.append("")
        out += [f"- *{c.claim}*: **{c.verdict}** ({c.here}; paper {c.paper})" for c in r.claims]
        out.append("")
    load_rows = [[LABELS.get(pl, pl), u, summary_cell(x.throughput), num(x.errors_pct),
                  f"{x.flagged} of {x.runs}"] for (pl, u), x in r.rows.items() if x.runs]
    out.append("**Load**: requests completed per second, failed requests (% of all, mean over "
               "runs) and the runs the generator's self-audit flagged.")
    out.append("")
    out.append(md_table(["placement", "users", "throughput (req/s)", "failed (%)",
                         "flagged runs"], load_rows))
    return Section("\n".join(out), r.claims)


def section(data: StudyData) -> Section:
    return render(compute(data))


def companions() -> Sequence[str]:
    """The experiments this study reads beside its own."""
    return tuple(TWO_HOSTS.values())
