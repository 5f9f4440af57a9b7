"""What every study shares: its input, intervals over runs, ratios, verdicts and the self-audit.

A study goes compute → dataclass → render: `compute(StudyData)` fits and
judges, with no file and no formatting; `render(dataclass)` writes Markdown
and the claims for the summary, with no statistics. The types both sides
share are here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..formatting import est, num
from ..stats import describe, mann_whitney

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 4999


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


def overall(verdicts: Sequence[str]) -> str:
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
    if held == failed == 0:
        return "inconclusive" if n == 1 else f"inconclusive in all {n} cells"
    return f"holds in {held} of {n} cells, does not hold in {failed}"


@dataclass(frozen=True)
class Claim:
    """One published finding and what this machine says about it: a row of the summary."""

    study: str
    claim: str
    verdict: str
    here: str
    paper: str


@dataclass(frozen=True)
class Section:
    """A study's rendered region and the claims it tested, for the caller to collect."""

    text: str
    claims: tuple[Claim, ...] = ()


@dataclass(frozen=True)
class StudyData:
    """One results directory as a study's compute reads it: DataFrames, no files.

    `tables` has, per operation, one row per ok run: the factor columns and
    every metric (results.response_table). `runs` has one row per planned
    run: run_id, bottleneck, duration_s, late_sends, and the generator's own
    gen_cpu_percent and gen_lag_p99_ms from run.json (NaN when missing).
    `factors` maps each varied spec key to its levels, in the spec's order.
    A run that got no answer for an operation in its window has no row in
    that operation's table; `notes` says which.
    """

    tables: Mapping[str, pd.DataFrame]
    runs: pd.DataFrame
    factors: Mapping[str, Sequence[str]]
    closed_loop: bool = False
    cores: int = 2
    # Other experiments a study reads beside its own, by experiment name
    # (S0 whole: one spec per two-host placement).
    companions: Mapping[str, StudyData] = field(default_factory=dict)
    # What was left out and why (study_data), for the region's head.
    notes: Sequence[str] = ()

    def table(self, operation: str = "total") -> pd.DataFrame:
        return self.tables[operation]


def cell(df: pd.DataFrame, **levels: Any) -> pd.DataFrame:
    mask = np.ones(len(df), dtype=bool)
    for k, v in levels.items():
        mask &= df[k].astype(str).to_numpy() == str(v)
    return df[mask]


def values(df: pd.DataFrame, metric: str, **levels: Any) -> np.ndarray:
    return cell(df, **levels)[metric].to_numpy(dtype=float)


def factor_levels(data: StudyData, name: str, fixed: str) -> tuple[str, ...]:
    """The levels a spec key took: the factor's, or the one fixed value of the spec."""
    levels = tuple(data.factors.get(name) or ())
    return levels if levels else (fixed,)


def mean_or_nan(x: Iterable[float]) -> float:
    """The mean of the values that are there; NaN, without a warning, when none is."""
    a = np.asarray(list(x), dtype=float)
    a = a[~np.isnan(a)]
    return float(a.mean()) if len(a) else math.nan


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Difference:
    diff: float
    lo: float
    hi: float


def difference_of(a: np.ndarray, b: np.ndarray) -> Difference:
    """mean(a) − mean(b) with Welch's t interval; NaN interval below two runs a side."""
    a = a[np.isfinite(a)]
    b = b[np.isfinite(b)]
    if len(a) == 0 or len(b) == 0:
        return Difference(math.nan, math.nan, math.nan)
    diff = float(np.mean(a) - np.mean(b))
    if len(a) < 2 or len(b) < 2 or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return Difference(diff, math.nan, math.nan)
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(confidence_level=CONFIDENCE)
    return Difference(diff, float(ci.low), float(ci.high))


def ratio_cell(r: Ratio) -> str:
    return est(r.ratio, r.lo, r.hi, "×")


@dataclass(frozen=True)
class Audit:
    """One configuration's cost and the generator's self-audit, over its runs."""

    cpu_ms: Summary  # CPU ms of the system under test per request
    service_p50: Summary  # median service time, ms
    generator_cpu: float  # mean over runs of the generator's CPU (%), NaN without any
    late_pct: float  # mean over runs of the sends more than 1 ms late (%), NaN without any
    lag_p99: float  # the worst run's send lag p99 (ms), NaN without any
    flagged: int
    runs: int


def audit(data: StudyData, part: pd.DataFrame) -> Audit:
    """The cost and self-audit of the runs in `part` (rows of a study table)."""
    runs = data.runs.set_index("run_id")
    ids = [r for r in part["run_id"] if r in runs.index]
    lags = runs.loc[ids, "gen_lag_p99_ms"].to_numpy(dtype=float)
    late = [100.0 * float(runs["late_sends"].get(r, math.nan)) / float(c)
            for r, c in zip(part["run_id"], part["count"], strict=True) if c]
    return Audit(
        summarise(part["cpu_s_per_1k"].to_numpy(dtype=float)),
        summarise(part["service_p50_ms"].to_numpy(dtype=float)),
        mean_or_nan(runs.loc[ids, "gen_cpu_percent"]),
        mean_or_nan(late),
        float(np.max(lags[~np.isnan(lags)])) if (~np.isnan(lags)).any() else math.nan,
        flagged(data.runs, part),
        len(part),
    )


def flagged(runs: pd.DataFrame, part: pd.DataFrame) -> int:
    """How many of the runs in `part` the generator's self-audit flagged."""
    return int(runs[runs["run_id"].isin(set(part["run_id"]))]["bottleneck"].sum())


AUDIT_HEADER = ["CPU ms per request", "service time p50 (ms)", "generator CPU (%)",
                "late sends (%)", "worst lag p99 (ms)", "flagged runs"]


def audit_cells(a: Audit, closed_loop: bool) -> list[str]:
    """The AUDIT_HEADER columns of one configuration."""
    # In a closed loop "late" means behind the user's own pace (the previous
    # answer came late), not a send the generator failed to make on time.
    na = "n/a (closed loop)"
    return [summary_cell(a.cpu_ms), summary_cell(a.service_p50), num(a.generator_cpu),
            na if closed_loop else num(a.late_pct), na if closed_loop else num(a.lag_p99),
            f"{a.flagged} of {a.runs}"]
