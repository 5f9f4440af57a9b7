"""What every study shares: intervals over runs, ratios, verdicts and the self-audit table."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..formatting import est, num
from ..results import Experiment
from ..stats import describe, mann_whitney
from .store import closed_loop, run_audits

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
    return f"holds in {held} of {n} cells, does not hold in {failed}"


@dataclass
class Claim:
    """One published finding and what this machine says about it: a row of the summary."""

    study: str
    claim: str
    verdict: str
    here: str
    paper: str


def cell(df: pd.DataFrame, **levels: Any) -> pd.DataFrame:
    mask = np.ones(len(df), dtype=bool)
    for k, v in levels.items():
        mask &= df[k].astype(str).to_numpy() == str(v)
    return df[mask]


def values(df: pd.DataFrame, metric: str, **levels: Any) -> np.ndarray:
    return cell(df, **levels)[metric].to_numpy(dtype=float)


def _numeric_levels(exp: Experiment, name: str) -> list[str]:
    for f in exp.factors:
        if f.name == name:
            return list(f.levels)
    return []


def factor_levels(exp: Experiment, name: str, fixed: str) -> list[str]:
    """The levels a spec key took: the factor's, or the one fixed value of the spec."""
    levels = _numeric_levels(exp, name)
    return levels if levels else [fixed]


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


def audit_rows(
    exp: Experiment, df: pd.DataFrame, configs: Sequence[tuple[dict[str, str], list[str]]]
) -> list[list[str]]:
    """Per configuration (its levels, its label cells): CPU per request, the
    service-time p50 and the generator's self-audit."""
    audits = run_audits(exp)
    late = exp.runs.set_index("run_id")["late_sends"]
    # In a closed loop "late" means behind the user's own pace (the previous
    # answer came late), not a send the generator failed to make on time.
    closed = closed_loop(exp)
    rows = []
    for levels, labels in configs:
        part = cell(df, **levels)
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
