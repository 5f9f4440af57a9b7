"""S0: granularity and placement under growing load."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..design import anova
from ..errors import AnalysisError
from ..formatting import est, md_table, num, pval
from ..results import Experiment, response_table
from .common import (
    Claim,
    Ratio,
    cell,
    difference_of,
    factor_levels,
    flagged,
    ratio_cell,
    ratio_of,
    summarise,
    summary_cell,
    values,
)
from .store import provenance, run_audits

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


def s0_section(exp: Experiment, claims: list[Claim]) -> str:
    metric = "p95_ms"
    df = response_table(exp, "total")
    if "deploy.transport" in df.columns:
        # The paper compares placements on one RPC system: grpc's runs stand
        # in for it; protorpc's are a factor of svclab's own, not pooled in.
        df = df[df["deploy.transport"].astype(str) == "grpc"]
    placements = factor_levels(exp, "deploy.placement", "monolith")
    users = factor_levels(exp, "load.users", "1")
    cores = (exp.meta.get("host") or {}).get("cores") or 2
    out = [provenance(exp, "bin/svclab run experiments/s0-granularity.toml"), ""]
    out.append("**p95 latency (ms)** per placement and closed-loop users: the mean over runs of "
               "each run's p95, with a 95% Student-t interval over runs, and the median run "
               "(a run's p95 is outlier-prone: one stalled second moves it). Paper: Online "
               "Boutique on Service Weaver, p95 at its lowest → highest load (500 → 2250 "
               "users).")
    out.append("")
    rows = []
    for pl in placements:
        letter = S0_PLACEMENT_MAP.get(pl)
        paper = (f"({letter}) {S0_PAPER_NAMES[letter]}: {num(S0_PAPER[letter][0])} → "
                 f"{num(S0_PAPER[letter][1])}") if letter else "—"
        row = [pl, paper]
        for u in users:
            x = values(df, metric, **{"deploy.placement": pl, "load.users": u})
            s = summarise(x)
            med = f"; median {num(float(np.median(x)))}" if len(x) else ""
            row.append(summary_cell(s) + med)
        rows.append(row)
    out.append(md_table(["placement", "paper: p95 low → high load (ms)",
                         *[f"{u} users" for u in users]], rows))
    out.append("")

    if "monolith" in placements and len(users) >= 2:
        out.append("**Granularity's cost as load grows**: p95 of each placement ÷ the "
                   "monolith's, per user level (ratio of the run p95s' medians, 95% bootstrap "
                   "interval). Paper: (d) ÷ (a) "
                   f"{num(S0_PAPER['d'][0] / S0_PAPER['a'][0])}× at low load, "
                   f"{num(S0_PAPER['d'][1] / S0_PAPER['a'][1])}× at high load; (c) ÷ (a) "
                   f"{num(S0_PAPER['c'][0] / S0_PAPER['a'][0])}× and "
                   f"{num(S0_PAPER['c'][1] / S0_PAPER['a'][1])}×.")
        out.append("")
        rows = []
        by_pl: dict[str, list[Ratio]] = {}
        for pl in placements:
            if pl == "monolith":
                continue
            rs = [ratio_of(values(df, metric, **{"deploy.placement": pl, "load.users": u}),
                           values(df, metric, **{"deploy.placement": "monolith",
                                                  "load.users": u})) for u in users]
            by_pl[pl] = rs
            rows.append([f"{pl} ÷ monolith", *[ratio_cell(r) for r in rs]])
        for pl in placements:
            if pl == "monolith":
                continue
            cells = []
            for u in users:
                d = difference_of(
                    values(df, metric, **{"deploy.placement": pl, "load.users": u}),
                    values(df, metric, **{"deploy.placement": "monolith", "load.users": u}))
                cells.append(est(d[0], d[1], d[2]))
            rows.append([f"{pl} − monolith (ms)", *cells])
        out.append(md_table(["placement vs monolith", *[f"{u} users" for u in users]], rows))
        out.append("")
        out.append("*Differences: mean p95 of the placement minus the monolith's, with Welch's "
                   "95% interval.*")
        out.append("")
        finest = "split" if "split" in by_pl else next(iter(by_pl), None)
        if finest is not None:
            first, last = by_pl[finest][0], by_pl[finest][-1]
            low_paper = S0_PAPER["d"][0] / S0_PAPER["a"][0]
            # Part 1: at the lowest load the penalty is as small as the paper's (d) ÷ (a).
            if not (math.isfinite(first.lo) and math.isfinite(first.hi)):
                low_v = "inconclusive (no interval)"
            elif first.lo > low_paper:
                low_v = "does not hold (larger)"
            else:
                low_v = "holds"
            # Part 2: the ratio grows with load (intervals at the ends not overlapping).
            if not all(math.isfinite(x) for x in (first.lo, first.hi, last.lo, last.hi)):
                grow_v = "inconclusive (no interval)"
            elif last.lo > first.hi and last.lo > 1:
                grow_v = "holds"
            elif last.hi < first.lo:
                grow_v = "does not hold (shrinks)"
            else:
                grow_v = "inconclusive (the intervals overlap)"
            claims.append(Claim(
                "S0", "fine granularity costs little at low load", low_v,
                f"{finest} ÷ monolith p95 {ratio_cell(first)} at {users[0]} users",
                f"(d) ÷ (a) {num(low_paper)}×"))
            claims.append(Claim(
                "S0", "granularity's cost grows to dominate at high load", grow_v,
                f"{finest} ÷ monolith p95 {ratio_cell(first)} → {ratio_cell(last)} "
                f"({users[0]} → {users[-1]} users)",
                f"(d) ÷ (a) {num(low_paper)}× → {num(S0_PAPER['d'][1] / S0_PAPER['a'][1])}×"))
            out.append(f"Verdicts on *fine granularity costs little at low load* ({finest} ÷ "
                       f"monolith at {users[0]} users no larger than the paper's "
                       f"{num(low_paper)}×): **{low_v}**; on *and dominates at high load* (the "
                       f"ratio at {users[-1]} users above 1 and above its value at {users[0]} "
                       f"users, intervals not overlapping): **{grow_v}**.")
            out.append("")

    factors = [f.name for f in exp.factors if f.name in ("deploy.placement", "load.users")]
    if factors:
        try:
            av = anova(df, metric, factors, log=True)
            rows = [[("error (between runs)" if t["term"] == "Residual" else str(t["term"])),
                     str(int(t["df"])), num(t["percent"]), pval(t["p"])]
                    for _, t in av.iterrows()]
            out.append("**ANOVA on log(p95)** (type II): each term's share of the variation.")
            out.append("")
            out.append(md_table(["term", "df", "variation explained (%)", "p"], rows))
            out.append("")
        except AnalysisError as exc:
            out.append(f"*ANOVA not computed: {exc}.*")
            out.append("")

    audits = run_audits(exp)
    rows = []
    for pl in placements:
        for u in users:
            part = cell(df, **{"deploy.placement": pl, "load.users": u})
            dur = exp.runs.set_index("run_id").loc[list(part["run_id"]), "duration_s"] \
                if len(part) else pd.Series(dtype=float)
            sut = 100.0 * part["cpu_s"].to_numpy(dtype=float) / dur.to_numpy(dtype=float) \
                if len(part) else np.array([])
            gen = [audits[r].cpu_percent for r in part["run_id"] if r in audits]
            rows.append([pl, u, summary_cell(summarise(part["throughput_rps"].to_numpy(
                dtype=float))), summary_cell(summarise(part["cpu_s_per_1k"].to_numpy(
                    dtype=float))), num(float(np.nanmean(sut))) if len(sut) else "—",
                num(float(np.nanmean(gen))) if gen else "—",
                f"{flagged(exp, part)} of {len(part)}"])
    out.append(f"**Load and cost**: throughput, CPU ms of the system under test per request and "
               f"its CPU use (% of one core; the machine has {cores}), from resources.parquet; "
               "the generator's own CPU (same unit) and the runs its self-audit flagged.")
    out.append("")
    out.append(md_table(["placement", "users", "throughput (req/s)", "CPU ms per request",
                         "system CPU (%)", "generator CPU (%)", "flagged runs"], rows))
    return "\n".join(out)
