"""Regenerate the tables of docs/REPLICATIONS.md from svclab results directories.

docs/REPLICATIONS.md is hand-written prose with marked regions::

    <!-- BEGIN s3 -->
    ... generated: never edit by hand ...
    <!-- END s3 -->

This module rewrites each region from the newest results directory of its
spec (``results/s3-style-YYYYMMDD-HHMMSS``), putting the published study's
numbers (constants below, from SEEDS.md) next to svclab's, with confidence
intervals over runs: the run is the unit of replication. Every verdict
("holds", "does not hold", "inconclusive") is computed from those
intervals, never typed in.

    python -m svclab_analysis.replications                  # newest results of every spec
    python -m svclab_analysis.replications --results results --doc docs/REPLICATIONS.md
    python -m svclab_analysis.replications s3=results/s3-style-20261122-040000

A region whose spec has no results is left as it is, so running this on a
fresh clone does not erase the committed tables.

``scripts/replicate.sh`` writes ``replicate.json`` into each results
directory (the command, its wall time and the load average around it);
the regions quote it when it is there.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .design import anova, factorial
from .errors import AnalysisError
from .results import Experiment, load_experiment, response_table
from .formatting import ci, num, pval
from .stats import describe, mann_whitney, sample_size

PROG = "python -m svclab_analysis.replications"
CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 4999

# ---------------------------------------------------------------- the papers' numbers (SEEDS.md)

# S3: median latency in seconds (std dev), per implementation and size.
S3_PAPER: dict[tuple[str, str], tuple[float, float]] = {
    ("Go/gRPC", "std"): (0.00071, 0.00006),
    ("Go/gRPC", "large"): (0.00768, 0.00070),
    ("Go/REST", "std"): (0.00323, 0.00028),
    ("Go/REST", "large"): (0.00447, 0.00067),
    ("Java/gRPC", "std"): (0.00119, 0.00017),
    ("Java/gRPC", "large"): (0.00803, 0.00134),
    ("Java/REST", "std"): (0.00321, 0.00023),
    ("Java/REST", "large"): (0.00451, 0.00066),
}
# S3: allocation of variation (%), StdSize / LargeSize.
S3_PAPER_ALLOCATION: dict[str, tuple[float, float]] = {
    "language": (1.67, 1.69),
    "communication style": (93.66, 96.40),
    "interaction": (2.27, 0.66),
    "error": (2.38, 1.23),
}
S3_PAPER_N = 77  # requests per repetition, from Jain's formula on a 10-request pilot
S3_PAPER_R = 5

# S4: ms per call on one machine, as ranges over the operations.
S4_PAPER_GRPC_MS = (7.0, 7.7)  # gRPC, Python client and server
S4_PAPER_NETRPC_MS = (0.7, 1.1)  # Go net/rpc
S4_STRING_LENS = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]

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


# ---------------------------------------------------------------- small helpers


def est(value: float, lo: float, hi: float, unit: str = "") -> str:
    """`1.23 (1.10–1.40)`, or `2.1× (1.9–2.3)`: an estimate and its interval.

    The unit, if any, follows the estimate; a missing interval is left out.
    """
    if not math.isfinite(value):
        return "—"
    text = num(value) + unit
    interval = ci(lo, hi)
    return text if interval == "—" else f"{text} ({interval})"


def verdict(lo: float, hi: float, expect_above_one: bool) -> str:
    """Whether an interval for a ratio supports a claim that it is above (or below) 1."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "inconclusive (no interval)"
    if expect_above_one:
        if lo > 1:
            return "holds"
        if hi < 1:
            return "does not hold (reversed)"
    else:
        if hi < 1:
            return "holds"
        if lo > 1:
            return "does not hold (reversed)"
    return "inconclusive (the interval includes 1)"


def p_text(p: Any) -> str:
    """`p = 0.012` or `p < 0.0001`."""
    s = pval(p)
    return f"p {s}" if s.startswith("<") else f"p = {s}"


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def esc(c: str) -> str:
        return c.replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def duration_text(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "—"
    s = round(seconds)
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def _parse_time(s: Any) -> datetime | None:
    if not isinstance(s, str) or not s:
        return None
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass
class RunAudit:
    """What the load generator said about itself in one run."""

    bottleneck: bool
    cpu_percent: float
    lag_p99_ms: float
    reason: str


def run_audits(exp: Experiment) -> dict[str, RunAudit]:
    out: dict[str, RunAudit] = {}
    for _, r in exp.runs.iterrows():
        try:
            with open(Path(str(r["dir"])) / "run.json", encoding="utf-8") as fh:
                g = json.load(fh).get("generator") or {}
        except (OSError, json.JSONDecodeError):
            g = {}
        out[str(r["run_id"])] = RunAudit(
            bottleneck=bool(r["bottleneck"]),
            cpu_percent=float(g.get("cpu_percent") or math.nan),
            lag_p99_ms=float(g.get("lag_p99_ms") or math.nan),
            reason=str(g.get("reason") or ""),
        )
    return out


def replicate_info(exp: Experiment) -> dict[str, Any]:
    """replicate.json of a results directory (scripts/replicate.sh writes it), or {}."""
    path = exp.path / "replicate.json"
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def wall_time(exp: Experiment, rep: dict[str, Any]) -> str:
    """The spec's wall time: replicate.sh's measurement, else the runs' span."""
    if "wall_s" in rep:
        return f"{duration_text(float(rep['wall_s']))} (measured by scripts/replicate.sh, " \
               "analysis included)"
    start = _parse_time(exp.meta.get("created"))
    ends: list[datetime] = []
    for d in exp.runs["dir"]:
        try:
            with open(Path(str(d)) / "run.json", encoding="utf-8") as fh:
                t = _parse_time(json.load(fh).get("ended"))
        except (OSError, json.JSONDecodeError):
            t = None
        if t is not None:
            ends.append(t)
    if start is None or not ends:
        return "—"
    return f"{duration_text((max(ends) - start).total_seconds())} " \
           "(first run's start to last run's end; analysis not included)"


def provenance(exp: Experiment, default_command: str) -> str:
    """Where the numbers come from: directory, command, wall time, load, binary."""
    meta = exp.meta
    runs = exp.runs
    n_ok = int((runs["status"] == "ok").sum())
    n_flag = int(runs["bottleneck"].sum())
    planned = meta.get("runs")
    n_planned = len(planned) if isinstance(planned, list) else len(runs)
    rep = replicate_info(exp)
    command = str(rep.get("command") or "")
    if not command and meta.get("spec_path"):
        sets = [f"--set {shlex.quote(str(o))}" for o in meta.get("overrides") or []]
        command = " ".join(["bin/svclab run", *sets, shlex.quote(str(meta["spec_path"]))])
    command = command or default_command
    wall = wall_time(exp, rep)
    host = meta.get("host") or {}
    design = meta.get("design") or {}
    lines = [
        f"- Results: `{exp.path.name}`, {n_ok} of {n_planned} planned runs ok, "
        f"{n_flag} flagged by the generator's self-audit.",
        f"- Command: `{command}`",
        f"- Wall time: {wall}.",
    ]
    created = _parse_time(meta.get("created"))
    when = created.strftime("%Y-%m-%d %H:%M UTC") if created else "—"
    lines.append(
        f"- Ran {when} on {host.get('cores', '?')} cores ({host.get('cpu_model', '?')}),"
        f" svclab {meta.get('svclab_version', '?')}; each run {design.get('warmup_s', '?')} s"
        f" warm-up + {design.get('duration_s', '?')} s measured, r = "
        f"{design.get('repetitions', '?')}, order {design.get('order', '?')} "
        f"(seed {meta.get('seed', '?')})."
    )
    load_bits = []
    if rep.get("loadavg_before") and rep.get("loadavg_after"):
        load_bits.append(f"{rep['loadavg_before']} before and {rep['loadavg_after']} after "
                         "(1, 5, 15 min)")
    during = rep.get("loadavg_during")
    if isinstance(during, dict) and during.get("samples"):
        load_bits.append(f"1-min average while it ran: mean {num(during.get('mean_1m'))}, "
                         f"max {num(during.get('max_1m'))} ({during['samples']} samples)")
    if load_bits:
        lines.append(f"- Load average: {'; '.join(load_bits)}. This experiment's own "
                     "processes account for up to about 2 of it; the rest is other work on "
                     "the machine.")
    return "\n".join(lines)


def _closed(exp: Experiment) -> bool:
    """Whether the runs used a closed loop (from the plan's effective specs)."""
    for r in exp.meta.get("runs") or []:
        load = ((r or {}).get("spec") or {}).get("load") or {}
        return str(load.get("mode") or "open") == "closed"
    return False


def _cell(df: pd.DataFrame, **levels: Any) -> pd.DataFrame:
    mask = np.ones(len(df), dtype=bool)
    for k, v in levels.items():
        mask &= df[k].astype(str).to_numpy() == str(v)
    return df[mask]


def _values(df: pd.DataFrame, metric: str, **levels: Any) -> np.ndarray:
    return _cell(df, **levels)[metric].to_numpy(dtype=float)


@dataclass
class Summary:
    n: int
    mean: float
    lo: float
    hi: float
    sd: float


def summarise(x: np.ndarray) -> Summary:
    """Mean over runs with a Student-t interval."""
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return Summary(0, math.nan, math.nan, math.nan, math.nan)
    d = describe(pd.DataFrame({"y": x}), ["y"], confidence=CONFIDENCE).iloc[0]
    return Summary(len(x), float(d["mean"]), float(d["mean_ci_low"]), float(d["mean_ci_high"]),
                   float(d["sd"]))


def summary_cell(s: Summary, unit: str = "") -> str:
    return est(s.mean, s.lo, s.hi, unit)


@dataclass
class Ratio:
    ratio: float
    lo: float
    hi: float
    p: float


def ratio_of(a: np.ndarray, b: np.ndarray) -> Ratio:
    """median(a)/median(b) over runs with a bootstrap interval, and Mann-Whitney's p."""
    a = a[np.isfinite(a)]
    b = b[np.isfinite(b)]
    if len(a) == 0 or len(b) == 0:
        return Ratio(math.nan, math.nan, math.nan, math.nan)
    if len(a) < 2 or len(b) < 2:
        # One run a side: a ratio, but no interval and no test.
        mb = float(np.median(b))
        return Ratio(float(np.median(a)) / mb if mb else math.nan, math.nan, math.nan, math.nan)
    r = mann_whitney(a, b, confidence=CONFIDENCE, n_resamples=BOOTSTRAP_RESAMPLES, seed=0)
    return Ratio(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"], r["p"])


def difference_of(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """mean(a) − mean(b) with Welch's t interval; NaN interval below two runs a side."""
    a = a[np.isfinite(a)]
    b = b[np.isfinite(b)]
    if len(a) == 0 or len(b) == 0:
        return math.nan, math.nan, math.nan
    diff = float(np.mean(a) - np.mean(b))
    if len(a) < 2 or len(b) < 2 or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return diff, math.nan, math.nan
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(confidence_level=CONFIDENCE)
    return diff, float(ci.low), float(ci.high)


def ratio_cell(r: Ratio) -> str:
    return est(r.ratio, r.lo, r.hi, "×")


AUDIT_HEADER = ["CPU ms per request", "service time p50 (ms)", "generator CPU (%)",
                "late sends (%)", "worst lag p99 (ms)", "flagged runs"]


def _audit_rows(
    exp: Experiment, df: pd.DataFrame, configs: Sequence[tuple[dict[str, str], list[str]]]
) -> list[list[str]]:
    """Per configuration (its levels, its label cells): CPU per request, the
    service-time p50 and the generator's self-audit."""
    audits = run_audits(exp)
    late = exp.runs.set_index("run_id")["late_sends"]
    # In a closed loop "late" means behind the user's own pace (the previous
    # answer came late), not a send the generator failed to make on time.
    closed = _closed(exp)
    rows = []
    for levels, labels in configs:
        part = _cell(df, **levels)
        cpu = summarise(part["cpu_s_per_1k"].to_numpy(dtype=float))
        svc = summarise(part["service_p50_ms"].to_numpy(dtype=float))
        ids = [r for r in part["run_id"] if r in audits]
        gen = [audits[r].cpu_percent for r in ids]
        lags = [audits[r].lag_p99_ms for r in ids]
        late_pct = [100.0 * float(late.get(r, math.nan)) / float(c)
                    for r, c in zip(part["run_id"], part["count"], strict=True) if c]
        rows.append([*labels, summary_cell(cpu), summary_cell(svc),
                     num(float(np.nanmean(gen))) if gen else "—",
                     "n/a (closed loop)" if closed else
                     num(float(np.nanmean(late_pct))) if late_pct else "—",
                     "n/a (closed loop)" if closed else
                     num(float(np.nanmax(lags))) if lags else "—",
                     f"{flagged(exp, part)} of {len(part)}"])
    return rows


def flagged(exp: Experiment, df: pd.DataFrame) -> int:
    ids = set(df["run_id"])
    runs = exp.runs
    return int(runs[runs["run_id"].isin(ids)]["bottleneck"].sum())


def _numeric_levels(exp: Experiment, name: str) -> list[str]:
    for f in exp.factors:
        if f.name == name:
            return list(f.levels)
    return []


def _factor(exp: Experiment, name: str, fixed: str) -> list[str]:
    """The levels a spec key took: the factor's, or the one fixed value of the spec."""
    levels = _numeric_levels(exp, name)
    return levels if levels else [fixed]


@dataclass
class Claim:
    """One published finding and what this machine says about it: a row of the summary."""

    study: str
    claim: str
    verdict: str
    here: str
    paper: str


def _overall(verdicts: Sequence[str]) -> str:
    """One verdict for a claim tested in several cells."""
    if not verdicts:
        return "not tested"
    n = len(verdicts)
    held = sum(v == "holds" for v in verdicts)
    failed = sum(v.startswith("does not hold") for v in verdicts)
    if held == n:
        return "holds"
    if failed == n:
        return "does not hold"
    return f"holds in {held} of {n} cells, does not hold in {failed}"


# ---------------------------------------------------------------- S3


def s3_section(exp: Experiment, claims: list[Claim]) -> str:
    metric = "p50_ms"
    shape = "back-to-back calls" if _closed(exp) else "open loop"
    df = response_table(exp, "total")
    sizes = ["std", "large"]
    transports = [("grpc", "Go/gRPC"), ("http", "Go/REST")]
    out = [provenance(exp, "bin/svclab run experiments/s3-style.toml"), ""]

    out.append("**Median latency (ms).** Paper: the median (sd) of its requests. svclab: the "
               "mean over runs of each run's median, with a 95% Student-t interval over runs, "
               "and the runs' sd.")
    out.append("")
    rows = []
    summ: dict[tuple[str, str], Summary] = {}
    for tr, label in transports:
        row = [label]
        for size in sizes:
            med, sd = S3_PAPER[(label, size)]
            s = summarise(_values(df, metric, **{"deploy.transport": tr, "app.size": size}))
            summ[(tr, size)] = s
            row += [f"{num(med * 1e3)} ({num(sd * 1e3)})",
                    f"{summary_cell(s)}, sd {num(s.sd)}, {s.n} runs"]
        rows.append(row)
    for label in ("Java/gRPC", "Java/REST"):
        row = [label]
        for size in sizes:
            med, sd = S3_PAPER[(label, size)]
            row += [f"{num(med * 1e3)} ({num(sd * 1e3)})", "not run (no Java implementation yet)"]
        rows.append(row)
    out.append(md_table(["implementation", "StdSize, paper", "StdSize, svclab",
                         "LargeSize, paper", "LargeSize, svclab"], rows))
    out.append("")

    out.append("**Which style wins.** REST ÷ gRPC: the paper's ratio of medians (Go), and "
               "svclab's ratio of the run medians with a 95% bootstrap interval over runs; p is "
               "Mann-Whitney U over runs (with 5 runs a side, the smallest possible p is 0.008).")
    out.append("")
    rows = []
    verdicts: dict[str, str] = {}
    for size, claim, above in (("std", "gRPC wins small requests", True),
                               ("large", "REST wins large requests", False)):
        paper = S3_PAPER[("Go/REST", size)][0] / S3_PAPER[("Go/gRPC", size)][0]
        r = ratio_of(_values(df, metric, **{"deploy.transport": "http", "app.size": size}),
                     _values(df, metric, **{"deploy.transport": "grpc", "app.size": size}))
        v = verdict(r.lo, r.hi, above)
        verdicts[size] = v
        claims.append(Claim("S3", f"{claim} ({shape})", v, f"REST ÷ gRPC {ratio_cell(r)}",
                            f"{num(paper)}×"))
        rows.append(["StdSize" if size == "std" else "LargeSize", f"{num(paper)}×",
                     ratio_cell(r), pval(r.p), claim, v])
    out.append(md_table(["size", "paper (Go)", "svclab", "p (runs)", "paper's claim",
                         "on this machine"], rows))
    out.append("")

    out.append("**Allocation of variation of the median latency, per size** (Jain ch. 18). The "
               "paper's 2²r design crosses language and style; svclab's has the style only "
               "(a 2¹r design per size), so the language rows are empty here.")
    out.append("")
    alloc: dict[str, dict[str, float]] = {}
    for size in sizes:
        part = _cell(df, **{"app.size": size})
        try:
            fit = factorial(part, metric, ["deploy.transport"], confidence=CONFIDENCE)
            t = fit.terms.set_index("term")
            alloc[size] = {"style": float(t.loc["deploy.transport", "percent"]),
                           "error": float(t.loc["Residual", "percent"])}
        except AnalysisError:
            alloc[size] = {"style": math.nan, "error": math.nan}
    for i, size in enumerate(sizes):
        share = alloc[size]["style"]
        paper_share = S3_PAPER_ALLOCATION["communication style"][i]
        claims.append(Claim(
            "S3", f"the style explains most of the variation, {size} ({shape})",
            "inconclusive (not computed)" if not math.isfinite(share) else
            "holds" if share > 50 else "does not hold",
            f"{num(share)}%", f"{num(paper_share)}%"))
    rows = []
    for term, (p_std, p_large) in S3_PAPER_ALLOCATION.items():
        key = {"communication style": "style", "error": "error"}.get(term)
        ours = [num(alloc[s][key]) if key else "—" for s in sizes]
        rows.append([term, num(p_std), ours[0], num(p_large), ours[1]])
    out.append(md_table(["term", "StdSize, paper (%)", "StdSize, svclab (%)",
                         "LargeSize, paper (%)", "LargeSize, svclab (%)"], rows))
    out.append("")

    out.append("**2²r over transport × size, on log(median latency)**: effects as ratios "
               "(+1 level ÷ −1 level) with 95% intervals, and each term's share of the variation.")
    out.append("")
    try:
        fit = factorial(df, metric, ["deploy.transport", "app.size"], log=True,
                        confidence=CONFIDENCE)
        rows = []
        for _, t in fit.terms.iterrows():
            if t["term"] == "Intercept":
                continue
            if t["term"] == "Residual":
                rows.append(["error (between runs)", "—", num(t["percent"])])
                continue
            rows.append([str(t["term"]), est(t["ratio"], t["ratio_low"], t["ratio_high"], "×"),
                         num(t["percent"])])
        coding = ", ".join(f"{c.name}: −1 = {c.low}, +1 = {c.high}" for c in fit.factors)
        out.append(md_table(["term", "ratio (95% CI)", "variation explained (%)"], rows))
        out.append("")
        out.append(f"*Coding: {coding}; r = {fit.replications}.*")
    except AnalysisError as exc:
        out.append(f"*Not computed: {exc}.*")
    out.append("")

    out.append("**Cost per request and the generator's self-audit** (evidence for the "
               "differences): CPU of the system under test per request, from resources.parquet, "
               "and the median service time (from the actual send, so free of the generator's "
               "lateness), both as the mean over runs with a 95% interval; the generator's own "
               "CPU, the share of sends that left more than 1 ms late, the worst run's send lag "
               "p99, and the runs the self-audit flagged.")
    out.append("")
    configs = [({"deploy.transport": tr, "app.size": size}, [label, size])
               for tr, label in transports for size in sizes]
    out.append(md_table(["implementation", "size", *AUDIT_HEADER],
                        _audit_rows(exp, df, configs)))
    out.append("")
    out.append("Verdicts, computed from the intervals: StdSize, *gRPC wins*: "
               f"**{verdicts['std']}**; LargeSize, *REST wins*: **{verdicts['large']}**.")
    return "\n".join(out)


# ---------------------------------------------------------------- S4

S4_OPS = ["void", "long", "eightlongs", "string", "movie"]


def s4_section(exp: Experiment, claims: list[Claim]) -> str:
    metric = "mean_ms"
    out = [provenance(exp, "bin/svclab run experiments/s4-rpc.toml"), ""]
    lens = _factor(exp, "app.string_len", "16")
    ops_present = set(exp.metrics["operation"])
    out.append("**Mean latency per call (ms)**, one call in flight. Paper (one machine): gRPC "
               f"with a Python client and server {num(S4_PAPER_GRPC_MS[0])}–"
               f"{num(S4_PAPER_GRPC_MS[1])} ms, Go net/rpc {num(S4_PAPER_NETRPC_MS[0])}–"
               f"{num(S4_PAPER_NETRPC_MS[1])} ms, i.e. gRPC "
               f"{num(S4_PAPER_GRPC_MS[0] / S4_PAPER_NETRPC_MS[1])}–"
               f"{num(S4_PAPER_GRPC_MS[1] / S4_PAPER_NETRPC_MS[0])}× slower, from 10 calls per "
               "operation. svclab: both sides in Go; the mean over runs of each run's mean, with "
               "a 95% Student-t interval over runs; grpc ÷ netrpc is the ratio of the run "
               "values' medians with a 95% bootstrap interval. Operations other than `string` "
               "do not depend on `app.string_len`, so their runs are pooled over it.")
    out.append("")
    rows = []
    ratios: list[Ratio] = []
    jain_rows: list[pd.DataFrame] = []
    for op in S4_OPS:
        if op not in ops_present:
            continue
        df = response_table(exp, op)
        groups: list[tuple[str, str | None]] = [(op, None)]
        if op == "string" and len(lens) > 1:
            groups = [(f"string, {n} chars", n) for n in lens]
            groups.append(("string, all lengths pooled", None))
        for label, n in groups:
            part = df if n is None else _cell(df, **{"app.string_len": n})
            g = _values(part, metric, **{"deploy.transport": "grpc"})
            nr = _values(part, metric, **{"deploy.transport": "netrpc"})
            sg, sn = summarise(g), summarise(nr)
            r = ratio_of(g, nr)
            if label != "string, all lengths pooled":
                ratios.append(r)
            rows.append([label, summary_cell(sg), summary_cell(sn), ratio_cell(r), pval(r.p),
                         f"{sg.n} / {sn.n}"])
            if len(part) > 0:
                ss = sample_size(part, metric, by=["deploy.transport"], error_pct=5.0,
                                 confidence=CONFIDENCE)
                ss.insert(0, "operation", label)
                jain_rows.append(ss)
    out.append(md_table(["operation", "grpc (ms)", "netrpc (ms)", "grpc ÷ netrpc",
                         "p (runs)", "runs grpc / netrpc"], rows))
    out.append("")
    finite = [r for r in ratios if math.isfinite(r.lo)]
    if finite:
        lo = min(r.ratio for r in finite)
        hi = max(r.ratio for r in finite)
        all_above = all(r.lo > 1 for r in finite)
        any_below = any(r.hi < 1 for r in finite)
        v = ("holds for every operation" if all_above else
             "does not hold for at least one operation" if any_below else
             "inconclusive for at least one operation (an interval includes 1)")
        out.append(f"grpc ÷ netrpc ranges over {num(lo)}–{num(hi)}× here, against "
                   f"{num(S4_PAPER_GRPC_MS[0] / S4_PAPER_NETRPC_MS[1])}–"
                   f"{num(S4_PAPER_GRPC_MS[1] / S4_PAPER_NETRPC_MS[0])}× in the paper. "
                   f"Verdict on *net/rpc is faster than gRPC on one machine*: **{v}**.")
        claims.append(Claim("S4", "net/rpc is faster than gRPC on one machine", v,
                            f"grpc ÷ netrpc {num(lo)}–{num(hi)}×",
                            f"{num(S4_PAPER_GRPC_MS[0] / S4_PAPER_NETRPC_MS[1])}–"
                            f"{num(S4_PAPER_GRPC_MS[1] / S4_PAPER_NETRPC_MS[0])}×"))
        out.append("")

    if len(lens) > 1:
        shares = []
        for op in ("void", "string"):
            if op not in ops_present:
                continue
            try:
                av = anova(response_table(exp, op), metric, ["deploy.transport",
                                                             "app.string_len"])
                t = av.set_index("term")
                share = float(t.loc["app.string_len", "percent"])
                share_txt = "< 0.01" if share < 0.01 else num(share)
                shares.append(f"`{op}` {share_txt}% ({p_text(t.loc['app.string_len', 'p'])})")
            except (AnalysisError, KeyError) as exc:
                shares.append(f"`{op}` not computed ({exc})")
        if shares:
            out.append("How much `app.string_len` explains of the variation of the mean latency "
                       "(ANOVA over transport × string_len): " + "; ".join(shares) + ". It is "
                       "not an input of `void` at all, which is why the other operations are "
                       "pooled over it.")
            out.append("")

    if jain_rows:
        jr = pd.concat(jain_rows, ignore_index=True)
        jr["cv"] = 100.0 * jr["sd"] / jr["mean"]
        out.append("**Repetitions (Jain).** From these runs, the repetitions each configuration "
                   "needs for a ±5% interval on the mean at 95% "
                   "(n = (100·t·s / (5·x̄))²), and the half-width the runs made achieve.")
        out.append("")
        rows = []
        for label in dict.fromkeys(jr["operation"]):
            row = [str(label)]
            for tr in ("grpc", "netrpc"):
                sel = jr[(jr["operation"] == label) & (jr["deploy.transport"].astype(str) == tr)]
                if sel.empty:
                    row += ["—", "—", "—", "—"]
                    continue
                r = sel.iloc[0]
                row += [str(int(r["n"])), num(r["cv"]), integer_or_dash(r["required"]),
                        f"±{num(r['halfwidth_pct'])}%"]
            rows.append(row)
        out.append(md_table(["operation", "grpc runs", "grpc sd/mean (%)", "grpc runs needed",
                             "grpc achieved", "netrpc runs", "netrpc sd/mean (%)",
                             "netrpc runs needed", "netrpc achieved"], rows))
        out.append("")
    out.append(f"Runs flagged by the generator's self-audit: {int(exp.runs['bottleneck'].sum())} "
               f"of {len(exp.runs)}.")
    return "\n".join(out)


def integer_or_dash(v: Any) -> str:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return "—"
    return str(int(x)) if math.isfinite(x) else "—"


# ---------------------------------------------------------------- S2


def s2_section(exp: Experiment, claims: list[Claim]) -> str:
    metric = "mean_ms"
    df = response_table(exp, "total")
    rates = _factor(exp, "load.rate", "10")
    payloads = _factor(exp, "app.payload", "small")
    transports = _factor(exp, "deploy.transport", "grpc")
    out = [provenance(exp, "bin/svclab run experiments/s2-payload.toml"), ""]
    out.append("**Mean response time (ms)** of the three-hop chain. Paper: Istio's default "
               "setup, 5 runs of 5 minutes. svclab: no mesh (the mesh factor comes later), "
               "one column per transport; the mean over runs of each run's mean, with a 95% "
               "Student-t interval over runs.")
    out.append("")
    rows = []
    for payload in payloads:
        for rate in rates:
            key = (int(float(rate)), payload)
            row = [f"{rate} req/s, {payload}", num(S2_PAPER_DEFAULT.get(key, math.nan))]
            for tr in transports:
                s = summarise(_values(df, metric, **{"load.rate": rate, "app.payload": payload,
                                                     "deploy.transport": tr}))
                row.append(f"{summary_cell(s)}, {s.n} runs")
            row += [num(S2_PAPER_OBSERVABILITY.get(key, math.nan)),
                    num(S2_PAPER_MTLS.get(key, math.nan))]
            rows.append(row)
    out.append(md_table(["rate, payload", "paper: default", *[f"svclab: {t}" for t in transports],
                         "paper: observability", "paper: mTLS"], rows))
    out.append("")

    d = S2_PAPER_DEFAULT
    out.append("**Effects as ratios** (ratio of the run means' medians, 95% bootstrap interval "
               "over runs). The paper's default setup: large ÷ small "
               f"{num(d[(10, 'large')] / d[(10, 'small')])}× at 10 req/s and "
               f"{num(d[(100, 'large')] / d[(100, 'small')])}× at 100; 100 ÷ 10 req/s "
               f"{num(d[(100, 'small')] / d[(10, 'small')])}× (small) and "
               f"{num(d[(100, 'large')] / d[(10, 'large')])}× (large).")
    out.append("")
    rows = []
    payload_v: list[str] = []
    rate_v: list[str] = []
    payload_r: list[Ratio] = []
    rate_r: list[tuple[str, Ratio]] = []
    if len(payloads) == 2:
        small, large = payloads
        for tr in transports:
            for rate in rates:
                r = ratio_of(_values(df, metric, **{"load.rate": rate, "app.payload": large,
                                                    "deploy.transport": tr}),
                             _values(df, metric, **{"load.rate": rate, "app.payload": small,
                                                    "deploy.transport": tr}))
                v = verdict(r.lo, r.hi, True)
                payload_v.append(v)
                payload_r.append(r)
                paper = S2_PAPER_DEFAULT.get((int(float(rate)), "large"), math.nan) / \
                    S2_PAPER_DEFAULT.get((int(float(rate)), "small"), math.nan)
                rows.append([f"{large} ÷ {small}", f"{tr}, {rate} req/s", f"{num(paper)}×",
                             ratio_cell(r), v])
    if len(rates) == 2:
        low, high = rates
        for tr in transports:
            for payload in payloads:
                r = ratio_of(_values(df, metric, **{"load.rate": high, "app.payload": payload,
                                                    "deploy.transport": tr}),
                             _values(df, metric, **{"load.rate": low, "app.payload": payload,
                                                    "deploy.transport": tr}))
                # The paper's default setup did not slow down at 100 req/s: the claim holds
                # unless the interval lies wholly above 1.
                v = ("does not hold (slower at the higher rate)" if r.lo > 1 else "holds")
                if not math.isfinite(r.lo):
                    v = "inconclusive (no interval)"
                rate_v.append(v)
                rate_r.append((f"{tr}, {payload}", r))
                paper = S2_PAPER_DEFAULT.get((int(float(high)), payload), math.nan) / \
                    S2_PAPER_DEFAULT.get((int(float(low)), payload), math.nan)
                rows.append([f"{high} ÷ {low} req/s", f"{tr}, {payload}", f"{num(paper)}×",
                             ratio_cell(r), v])
    out.append(md_table(["ratio", "where", "paper (default)", "svclab", "claim holds?"], rows))
    out.append("")
    if payload_r:
        claims.append(Claim(
            "S2", "a large payload costs more than a small one", _overall(payload_v),
            f"large ÷ small {num(min(r.ratio for r in payload_r))}–"
            f"{num(max(r.ratio for r in payload_r))}×",
            f"{num(d[(100, 'large')] / d[(100, 'small')])}–"
            f"{num(d[(10, 'large')] / d[(10, 'small')])}×"))
    if rate_r:
        failing = [f"{w} ({ratio_cell(r)})" for (w, r), v in zip(rate_r, rate_v, strict=True)
                   if v.startswith("does not hold")]
        claims.append(Claim(
            "S2", "the default setup is no slower at 100 than at 10 req/s", _overall(rate_v),
            "100 ÷ 10 req/s: slower for " + ", ".join(failing) if failing else
            f"100 ÷ 10 req/s {num(min(r.ratio for _, r in rate_r))}–"
            f"{num(max(r.ratio for _, r in rate_r))}×",
            f"{num(d[(100, 'large')] / d[(10, 'large')])}–"
            f"{num(d[(100, 'small')] / d[(10, 'small')])}×"))
    out.append("Claims tested: *a large payload costs more than a small one* (holds when the "
               "interval lies above 1); *without a mesh's tracing, 100 req/s is no slower than "
               "10 req/s* (holds unless the interval lies wholly above 1).")
    out.append("")

    factors = [f.name for f in exp.factors if f.name in
               ("load.rate", "app.payload", "deploy.transport")]
    if factors:
        out.append("**Allocation of variation** of the mean response time (2^k r, linear scale "
                   "as the paper's FrF2 analysis). The paper's shares are for setup × rate × "
                   "payload; svclab's setup factor is the transport until the mesh lands, so "
                   "only the rate, payload and rate × payload rows are comparable in kind.")
        out.append("")
        try:
            fit = factorial(df, metric, factors, confidence=CONFIDENCE)
            rows = []
            for _, t in fit.terms.iterrows():
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
        except AnalysisError as exc:
            out.append(f"*Not computed: {exc}.*")
        out.append("")

    configs = [({"load.rate": rate, "app.payload": payload, "deploy.transport": tr},
                [f"{rate} req/s, {payload}, {tr}"])
               for payload in payloads for rate in rates for tr in transports]
    out.append("**Cost and the generator's self-audit** per configuration: CPU ms of the "
               "system under test per request (resources.parquet) and the median service time "
               "(from the actual send), as means over runs with 95% intervals; the generator's "
               "CPU, the share of sends more than 1 ms late, the worst run's send lag p99, and "
               "the runs the self-audit flagged.")
    out.append("")
    out.append(md_table(["configuration", *AUDIT_HEADER], _audit_rows(exp, df, configs)))
    return "\n".join(out)


# ---------------------------------------------------------------- S0


def s0_section(exp: Experiment, claims: list[Claim]) -> str:
    metric = "p95_ms"
    df = response_table(exp, "total")
    if "deploy.transport" in df.columns:
        # The paper compares placements on one RPC system: grpc's runs stand
        # in for it; protorpc's are a factor of svclab's own, not pooled in.
        df = df[df["deploy.transport"].astype(str) == "grpc"]
    placements = _factor(exp, "deploy.placement", "monolith")
    users = _factor(exp, "load.users", "1")
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
            x = _values(df, metric, **{"deploy.placement": pl, "load.users": u})
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
            rs = [ratio_of(_values(df, metric, **{"deploy.placement": pl, "load.users": u}),
                           _values(df, metric, **{"deploy.placement": "monolith",
                                                  "load.users": u})) for u in users]
            by_pl[pl] = rs
            rows.append([f"{pl} ÷ monolith", *[ratio_cell(r) for r in rs]])
        for pl in placements:
            if pl == "monolith":
                continue
            cells = []
            for u in users:
                d = difference_of(
                    _values(df, metric, **{"deploy.placement": pl, "load.users": u}),
                    _values(df, metric, **{"deploy.placement": "monolith", "load.users": u}))
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
            part = _cell(df, **{"deploy.placement": pl, "load.users": u})
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


# ---------------------------------------------------------------- the document


@dataclass(frozen=True)
class Study:
    key: str
    experiment: str
    spec: str
    metric: str
    section: Callable[[Experiment, list[Claim]], str]


STUDIES: dict[str, Study] = {
    s.key: s
    for s in [
        Study("s3", "s3-style", "experiments/s3-style.toml", "p50_ms", s3_section),
        # S3's design with back-to-back calls: scripts/replicate.sh runs the same spec
        # with one closed-loop user and experiment.name = "s3-style-closed".
        Study("s3c", "s3-style-closed", "experiments/s3-style.toml", "p50_ms", s3_section),
        Study("s4", "s4-rpc", "experiments/s4-rpc.toml", "mean_ms", s4_section),
        Study("s2", "s2-payload", "experiments/s2-payload.toml", "mean_ms", s2_section),
        Study("s0", "s0-granularity", "experiments/s0-granularity.toml", "p95_ms", s0_section),
    ]
}

_STAMP = re.compile(r"-(\d{8}-\d{6})$")


def latest_results(root: Path, experiment: str) -> Path | None:
    """The newest `<experiment>-YYYYMMDD-HHMMSS` directory under root that has runs."""
    if not root.is_dir():
        return None
    best: tuple[str, Path] | None = None
    for d in root.iterdir():
        m = _STAMP.search(d.name)
        if not d.is_dir() or m is None or d.name[: m.start()] != experiment:
            continue
        if not (d / "experiment.json").exists() or not (d / "runs").is_dir():
            continue
        if best is None or m.group(1) > best[0]:
            best = (m.group(1), d)
    return best[1] if best else None


def region_re(key: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- BEGIN {re.escape(key)} -->\n)(.*?)(<!-- END {re.escape(key)} -->)",
                      re.DOTALL)


def rewrite(doc: str, sections: dict[str, str]) -> str:
    """Replace the body of each marked region named in `sections`."""
    for key, body in sections.items():
        rx = region_re(key)
        found = rx.findall(doc)
        if len(found) != 1:
            raise AnalysisError(
                f"expected exactly one region <!-- BEGIN {key} --> ... <!-- END {key} --> in "
                f"the document, found {len(found)}"
            )
        m = rx.search(doc)
        assert m is not None
        doc = doc[: m.start(2)] + body.rstrip("\n") + "\n" + doc[m.end(2):]
    return doc


GENERATED_NOTE = ("<!-- generated by `python -m svclab_analysis.replications` from {path}; "
                  "do not edit by hand -->")


def build_section(study: Study, path: Path, claims: list[Claim] | None = None,
                  exps: dict[str, Experiment] | None = None) -> str:
    exp = load_experiment(path, metric=study.metric, operation="total")
    if exps is not None:
        exps[study.key] = exp
    return GENERATED_NOTE.format(path=path.name) + "\n" + study.section(
        exp, claims if claims is not None else [])


SUMMARY_KEY = "summary"
RUNS_KEY = "runs"


def runs_section(exps: dict[str, Experiment]) -> str:
    """One line per study: spec, results directory, runs, flags and wall time."""
    rows = []
    for key, exp in exps.items():
        st = STUDIES[key]
        rep = replicate_info(exp)
        runs = exp.runs
        during = rep.get("loadavg_during") or {}
        load = (f"{num(during.get('mean_1m'))} (max {num(during.get('max_1m'))})"
                if isinstance(during, dict) and during.get("samples") else "—")
        rows.append([key, f"[{st.spec.rsplit('/', 1)[-1]}](../{st.spec})", f"`{exp.path.name}`",
                     f"{int((runs['status'] == 'ok').sum())} of {len(runs)}",
                     str(int(runs["bottleneck"].sum())), load,
                     duration_text(float(rep["wall_s"])) if "wall_s" in rep
                     else wall_time(exp, rep)])
    used = ", ".join(f"`{e.path.name}`" for e in exps.values())
    return "\n".join([
        GENERATED_NOTE.format(path=used),
        md_table(["study", "spec", "results", "runs ok", "runs flagged",
                  "1-min load average while running", "wall time"], rows),
    ])


def summary_section(claims: Sequence[Claim], sources: dict[str, Path]) -> str:
    """The verdict of every tested claim, from the same results as the sections."""
    rows = [[c.study, c.claim, f"**{c.verdict}**", c.here, c.paper] for c in claims]
    used = ", ".join(f"`{p.name}`" for p in sources.values())
    return "\n".join([
        GENERATED_NOTE.format(path=used),
        md_table(["study", "the paper's finding", "on this machine", "svclab", "paper"], rows),
    ])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="*", metavar="KEY=DIR",
                   help="use this results directory for a study (s3, s3c, s4, s2, s0) instead of "
                        "the newest one under --results")
    p.add_argument("--results", default="results", help="where results directories are")
    p.add_argument("--doc", default="docs/REPLICATIONS.md", help="the document to rewrite")
    p.add_argument("--only", help="comma-separated regions to rewrite: studies (s3, s3c, s4, "
                                  "s2, s0), summary, runs (default: all)")
    p.add_argument("--stdout", action="store_true",
                   help="print the generated regions instead of rewriting the document")
    args = p.parse_args(argv)
    try:
        explicit: dict[str, Path] = {}
        for item in args.dirs:
            key, sep, d = item.partition("=")
            if not sep or key not in STUDIES:
                raise AnalysisError(f"{item!r}: expected KEY=DIR with KEY one of "
                                    f"{', '.join(STUDIES)}")
            explicit[key] = Path(d)
        keys = list(STUDIES)
        if args.only:
            keys = [k.strip() for k in args.only.split(",") if k.strip()]
            for k in keys:
                if k not in STUDIES and k not in (SUMMARY_KEY, RUNS_KEY):
                    raise AnalysisError(f"--only {k}: unknown study; known: {', '.join(STUDIES)}")
        sections: dict[str, str] = {}
        claims: list[Claim] = []
        sources: dict[str, Path] = {}
        exps: dict[str, Experiment] = {}
        for key, st in STUDIES.items():
            path = explicit.get(key) or latest_results(Path(args.results), st.experiment)
            if path is None:
                if key in keys:
                    print(f"{key}: no results of {st.experiment} under {args.results}; region "
                          f"left as it is (run: bash scripts/replicate.sh {key})",
                          file=sys.stderr)
                continue
            own: list[Claim] = []
            body = build_section(st, path, own, exps)
            claims += own
            sources[key] = path
            if key in keys:
                sections[key] = body
                print(f"{key}: {path}", file=sys.stderr)
        # The summary and the runs table are rewritten only when every study has
        # results, so that they never mix a fresh study with a missing one.
        if len(sources) == len(STUDIES):
            if not args.only or SUMMARY_KEY in keys:
                sections[SUMMARY_KEY] = summary_section(claims, sources)
            if not args.only or RUNS_KEY in keys:
                sections[RUNS_KEY] = runs_section(exps)
        if args.stdout:
            for key, body in sections.items():
                print(f"<!-- BEGIN {key} -->\n{body}\n<!-- END {key} -->\n")
            return 0
        doc_path = Path(args.doc)
        try:
            doc = doc_path.read_text(encoding="utf-8")
        except OSError as exc:
            raise AnalysisError(f"{doc_path}: cannot read ({exc.strerror})") from None
        new = rewrite(doc, sections)
        if new != doc:
            doc_path.write_text(new, encoding="utf-8")
        print(f"{doc_path}: {len(sections)} region(s) rewritten", file=sys.stderr)
        return 0
    except AnalysisError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
