"""Run-level statistics: descriptive CIs, sample size, pairwise and rank tests.

Every function takes run-level rows (one row per run) and returns a
DataFrame. None of them should ever be given per-request samples: requests
within a run are correlated, so treating them as independent makes every
p-value tiny and every normality test reject (the weakness of S3).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from .design import numeric_response, ordered_levels
from .english import count
from .errors import AnalysisError


def mean_ci(x: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Student-t interval for the mean; NaN with fewer than two values."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return math.nan, math.nan
    if np.ptp(x) <= 1e-12 * np.max(np.abs(x)):
        return float(np.mean(x)), float(np.mean(x))
    ci = stats.ttest_1samp(x, 0.0).confidence_interval(confidence_level=confidence)
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class Interval:
    """A centre, or the ratio of two (`center_ratio`), with its interval and
    how it was computed.

    `method` is "log-t" (geometric mean; Student's t on ln y, back-transformed),
    "log-welch" (a ratio of geometric means; Welch's t on ln a − ln b),
    "bca" or "percentile" (the mean; bootstrap over runs), "t" (the mean;
    Student's t, for values that can be negative) or "none" (fewer than two
    values: no interval).
    """

    center: float
    low: float
    high: float
    method: str
    kind: str  # what `center` is (or is a ratio of): "geometric mean" or "mean"


# The rule for an interval over runs (docs/ANALYSIS.md, "Intervals the data
# can support"): a quantity positive in every run gets its interval on the log
# scale, which can never reach zero; one that is zero in some run (an error
# rate) gets a BCa bootstrap of the mean over runs, whose bounds stay inside
# the runs' range; only a quantity that can be negative gets Student's t.
def run_interval(
    x: np.ndarray, confidence: float = 0.95, n_resamples: int = 4999, seed: int = 0,
    positive: bool | None = None,
) -> Interval:
    """The interval over runs that the data can support (see the rule above).

    `positive` decides the scale for several groups alike (every group of a
    metric on the log scale when the metric is positive in every run of
    every group); by default x's own values decide."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if positive is None:
        positive = bool(len(x) and np.all(x > 0))
    kind = "geometric mean" if positive else "mean"
    if len(x) == 0:
        return Interval(math.nan, math.nan, math.nan, "none", kind)
    center = float(stats.gmean(x)) if positive else float(np.mean(x))
    if len(x) < 2:
        return Interval(center, math.nan, math.nan, "none", kind)
    if np.ptp(x) <= 1e-12 * np.max(np.abs(x)):
        return Interval(center, center, center, "log-t" if positive else "t", kind)
    if positive:
        lo, hi = mean_ci(np.log(x), confidence)
        return Interval(center, math.exp(lo), math.exp(hi), "log-t", kind)
    if np.any(x < 0):
        lo, hi = mean_ci(x, confidence)
        return Interval(center, lo, hi, "t", kind)
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            # Two or three runs make BCa degenerate; percentile is the fallback.
            warnings.simplefilter("ignore")
            res = stats.bootstrap((x,), np.mean, confidence_level=confidence,
                                  n_resamples=n_resamples, method=method,
                                  rng=np.random.default_rng(seed))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            return Interval(center, lo, hi, method.lower(), kind)
    return Interval(center, math.nan, math.nan, "none", kind)


def center_ratio(
    a: np.ndarray, b: np.ndarray, confidence: float = 0.95, positive: bool | None = None,
    n_resamples: int = 4999, seed: int = 0,
) -> Interval:
    """The ratio of a's centre to b's, the centres `run_interval` gives, with
    its interval over the two groups' runs.

    Geometric means (`positive`, by default when every value of both is):
    Welch's t on ln a − ln b (scipy's ttest_ind with unequal variances),
    back-transformed, method "log-welch". Means: a bootstrap of mean(a)/mean(b)
    over runs (BCa, percentile when BCa degenerates). No interval ("none")
    with fewer than two runs in either group, or a zero mean of b."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if positive is None:
        positive = bool(len(a) and len(b) and np.all(a > 0) and np.all(b > 0))
    kind = "geometric mean" if positive else "mean"
    if len(a) == 0 or len(b) == 0:
        return Interval(math.nan, math.nan, math.nan, "none", kind)
    centre = stats.gmean if positive else np.mean
    ca, cb = float(centre(a)), float(centre(b))
    ratio = ca / cb if cb != 0 else math.nan
    if len(a) < 2 or len(b) < 2 or not math.isfinite(ratio):
        return Interval(ratio, math.nan, math.nan, "none", kind)
    if positive:
        if all(np.ptp(x) <= 1e-12 * np.max(x) for x in (a, b)):
            return Interval(ratio, ratio, ratio, "log-welch", kind)  # no spread: no doubt
        iv = stats.ttest_ind(np.log(a), np.log(b), equal_var=False).confidence_interval(
            confidence_level=confidence)
        return Interval(ratio, math.exp(float(iv.low)), math.exp(float(iv.high)),
                        "log-welch", kind)

    def of_means(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(x, axis=axis) / np.mean(y, axis=axis)

    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            # Two or three runs make BCa degenerate; percentile is the fallback.
            warnings.simplefilter("ignore")
            res = stats.bootstrap((a, b), of_means, vectorized=True, paired=False,
                                  confidence_level=confidence, n_resamples=n_resamples,
                                  method=method, rng=np.random.default_rng(seed))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            return Interval(ratio, lo, hi, method.lower(), kind)
    return Interval(ratio, math.nan, math.nan, "none", kind)


def median_ci(x: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free order-statistic interval for the median.

    It exists only when the sample is large enough for the extreme order
    statistics to reach the confidence (n >= 6 at 95%); otherwise NaN.
    """
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return math.nan, math.nan
    res = stats.quantile_test(x, q=float(np.median(x)), p=0.5)
    ci = res.confidence_interval(confidence_level=confidence)
    return float(ci.low), float(ci.high)


def _groups(df: pd.DataFrame, by: Sequence[str]) -> list[tuple[tuple[str, ...], pd.DataFrame]]:
    if not by:
        return [((), df)]
    out = []
    for key, g in df.groupby(list(by), sort=True, observed=True):
        key_t = key if isinstance(key, tuple) else (key,)
        out.append((tuple(str(k) for k in key_t), g))
    return out


def describe(
    df: pd.DataFrame,
    metrics: Sequence[str],
    by: Sequence[str] = (),
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per group and metric: n, mean with CI, sd, CV and median with CI.

    `center`, `center_ci_low`, `center_ci_high`, `center_method` and
    `center_kind` are `run_interval`'s: the geometric mean on the log scale
    for a metric positive in every run (of every group), so that its
    interval never goes below zero.
    `mean_ci_*` stay Student's t on the original scale.

    NaN values of a metric (for example CPU when resources.parquet is absent)
    are dropped for that metric only.
    """
    rows: list[dict[str, Any]] = []
    # One scale per metric, so that every group's centre is the same kind.
    positive = {m: bool((pd.to_numeric(df[m], errors="coerce").dropna() > 0).all())
                for m in metrics}
    for key, g in _groups(df, by):
        for m in metrics:
            x = pd.to_numeric(g[m], errors="coerce").dropna().to_numpy(dtype=float)
            row: dict[str, Any] = dict(zip(by, key, strict=True))
            row["metric"] = m
            row["n"] = len(x)
            if len(x) == 0:
                rows.append(row)
                continue
            mean = float(np.mean(x))
            sd = float(np.std(x, ddof=1)) if len(x) > 1 else math.nan
            if sd == sd and sd <= 1e-12 * max(abs(mean), 1e-300):
                sd = 0.0  # float noise of equal values: no spread
            lo, hi = mean_ci(x, confidence)
            mlo, mhi = median_ci(x, confidence)
            iv = run_interval(x, confidence, positive=positive[m])
            row.update(
                mean=mean, mean_ci_low=lo, mean_ci_high=hi,
                center=iv.center, center_ci_low=iv.low, center_ci_high=iv.high,
                center_method=iv.method, center_kind=iv.kind, sd=sd,
                cv_pct=100.0 * sd / abs(mean) if mean != 0 and not math.isnan(sd) else math.nan,
                median=float(np.median(x)), median_ci_low=mlo, median_ci_high=mhi,
                min=float(np.min(x)), max=float(np.max(x)),
            )
            rows.append(row)
    cols = [*by, "metric", "n", "mean", "mean_ci_low", "mean_ci_high", "center", "center_ci_low",
            "center_ci_high", "center_method", "center_kind", "sd", "cv_pct", "median",
            "median_ci_low", "median_ci_high", "min", "max"]
    return pd.DataFrame(rows).reindex(columns=cols)


def sample_size(
    df: pd.DataFrame,
    response: str,
    by: Sequence[str] = (),
    error_pct: float = 5.0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Jain's estimate of the replications for a ±error_pct% interval on the mean.

    n = (100 · t · s / (r · x̄))², with t the two-sided Student quantile on
    the n−1 degrees of freedom of the runs so far (S3 used t(0.95; 9) = 1.833,
    which is confidence 0.90 with a 10-value pilot).
    """
    if error_pct <= 0:
        raise AnalysisError(f"--error must be positive, got {error_pct}")
    if not 0 < confidence < 1:
        raise AnalysisError(f"confidence must be between 0 and 1, got {confidence}")
    y = numeric_response(df, response)
    data = df.assign(**{response: y})
    rows: list[dict[str, Any]] = []
    for key, g in _groups(data, by):
        x = g[response].to_numpy(dtype=float)
        n = len(x)
        row: dict[str, Any] = dict(zip(by, key, strict=True))
        mean = float(np.mean(x))
        sd = float(np.std(x, ddof=1)) if n > 1 else math.nan
        t = float(stats.t.ppf(1 - (1 - confidence) / 2, n - 1)) if n > 1 else math.nan
        required: float
        if n > 1 and mean != 0:
            required = math.ceil((100.0 * t * sd / (error_pct * abs(mean))) ** 2)
            required = max(required, 2)
            half = 100.0 * t * sd / (abs(mean) * math.sqrt(n))
        else:
            required, half = math.nan, math.nan
        row.update(n=n, mean=mean, sd=sd, t=t, error_pct=error_pct, confidence=confidence,
                   required=required, additional=max(0, required - n) if required == required
                   else math.nan, halfwidth_pct=half)
        rows.append(row)
    return pd.DataFrame(rows)


def _ratio_of_medians_ci(
    a: np.ndarray, b: np.ndarray, confidence: float, n_resamples: int, seed: int
) -> tuple[float, float]:
    # A bootstrap needs two or more values per group; with one run per
    # configuration there is no interval to give, only the ratio itself.
    if len(a) < 2 or len(b) < 2 or np.median(b) == 0:
        return math.nan, math.nan

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(x, axis=axis) / np.median(y, axis=axis)

    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            # Tiny or tied samples make BCa degenerate; percentile is the fallback.
            warnings.simplefilter("ignore")
            res = stats.bootstrap(
                (a, b), ratio, vectorized=True, paired=False, confidence_level=confidence,
                n_resamples=n_resamples, method=method, rng=np.random.default_rng(seed),
            )
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            return lo, hi
    return math.nan, math.nan


def mann_whitney(
    a: np.ndarray,
    b: np.ndarray,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
) -> dict[str, float]:
    """Mann-Whitney U of a against b, with effect sizes and the ratio of medians.

    rank_biserial = 2·U_a/(n_a·n_b) − 1 lies in [−1, 1] and is positive when
    a tends to be larger; cles = U_a/(n_a·n_b) is P(a > b) + ½·P(a = b).
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if len(a) == 0 or len(b) == 0:
        raise AnalysisError("a group to compare has no values")
    res = stats.mannwhitneyu(a, b, alternative="two-sided")
    nn = len(a) * len(b)
    cles = float(res.statistic) / nn
    lo, hi = _ratio_of_medians_ci(a, b, confidence, n_resamples, seed)
    mb = float(np.median(b))
    return {
        "n_a": len(a), "n_b": len(b),
        "median_a": float(np.median(a)), "median_b": mb,
        "U": float(res.statistic), "p": float(res.pvalue),
        "rank_biserial": 2.0 * cles - 1.0, "cles": cles,
        "ratio": float(np.median(a)) / mb if mb != 0 else math.nan,
        "ratio_ci_low": lo, "ratio_ci_high": hi,
    }


def compare(
    df: pd.DataFrame,
    response: str,
    group: str,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
) -> dict[str, pd.DataFrame]:
    """Compare the levels of `group` on `response`.

    Returns "groups" (per-level n, median, mean), "pairs" (Mann-Whitney U for
    every pair with Holm-adjusted p, rank-biserial, CLES and the ratio of
    medians with a bootstrap CI) and, for more than two levels, "kruskal"
    (Kruskal-Wallis H) and "dunn" (Dunn's test, Holm-adjusted).
    """
    if group not in df.columns:
        raise AnalysisError(f"no column {group!r}; columns are: {', '.join(map(str, df.columns))}")
    y = numeric_response(df, response)
    if df[group].isna().any():
        empty = count(int(df[group].isna().sum()), "empty value")
        raise AnalysisError(f"group {group!r} has {empty}")
    levels = ordered_levels(df[group])
    if len(levels) < 2:
        only = levels[0] if levels else "none"
        raise AnalysisError(f"group {group!r} has only one level ({only}); it needs two")
    data = pd.DataFrame({"g": df[group].astype(str).to_numpy(), "y": y.to_numpy()})
    values = {lv: data.loc[data["g"] == lv, "y"].to_numpy() for lv in levels}

    groups = pd.DataFrame(
        [{"level": lv, "n": len(v), "median": float(np.median(v)), "mean": float(np.mean(v))}
         for lv, v in values.items()]
    )
    pair_rows = []
    for a, b in itertools.combinations(levels, 2):
        pair_rows.append({"a": a, "b": b, **mann_whitney(values[a], values[b], confidence,
                                                         n_resamples, seed)})
    pairs = pd.DataFrame(pair_rows)
    pairs["p_holm"] = multipletests(pairs["p"], method="holm")[1]
    out = {"groups": groups, "pairs": pairs}
    if len(levels) > 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kw = stats.kruskal(*values.values())
        out["kruskal"] = pd.DataFrame(
            [{"H": float(kw.statistic), "df": len(levels) - 1, "p": float(kw.pvalue)}]
        )
        import scikit_posthocs  # slow to import; only multi-level comparisons need it

        with warnings.catch_warnings():
            # All-tied data divides by zero inside Dunn's z: its p is NaN, shown as "—".
            warnings.simplefilter("ignore", RuntimeWarning)
            dunn = scikit_posthocs.posthoc_dunn(data, val_col="y", group_col="g",
                                                p_adjust="holm")
        out["dunn"] = pd.DataFrame(
            [{"a": a, "b": b, "p_holm": float(dunn.loc[a, b])}
             for a, b in itertools.combinations(levels, 2)]
        )
    return out


def shapiro(residuals: np.ndarray) -> dict[str, float]:
    """Shapiro-Wilk on model residuals (one per run); NaN when it cannot run."""
    r = np.asarray(residuals, dtype=float)
    r = r[np.isfinite(r)]
    if len(r) < 3 or np.ptp(r) == 0:
        return {"n": len(r), "W": math.nan, "p": math.nan}
    res = stats.shapiro(r)
    return {"n": len(r), "W": float(res.statistic), "p": float(res.pvalue)}


def qq_points(residuals: np.ndarray) -> pd.DataFrame:
    """Normal QQ coordinates of the residuals, with the fitted line's values."""
    r = np.asarray(residuals, dtype=float)
    r = r[np.isfinite(r)]
    if len(r) < 2:
        return pd.DataFrame(columns=["theoretical", "sample", "line"])
    (osm, osr), (slope, intercept, _) = stats.probplot(r, dist="norm")
    return pd.DataFrame({"theoretical": osm, "sample": osr, "line": slope * osm + intercept})


def cell_residuals(df: pd.DataFrame, response: str, by: Sequence[str]) -> np.ndarray:
    """Deviations of each run from its configuration's mean: the residuals of
    the full cell-means model, which exist for any design."""
    if not by:
        y = df[response].astype(float)
        return (y - y.mean()).to_numpy()
    means = df.groupby(list(by), observed=True)[response].transform("mean")
    return (df[response].astype(float) - means).to_numpy()


Cell = tuple[str, ...]


@dataclass(frozen=True)
class CellMeans:
    """The cell-means model of a design: one mean per configuration and the
    pooled within-configuration variance, on the log scale when `log`.

    Every contrast of configurations (a marginal mean, a ratio of levels, a
    ratio of ratios) is a weighted sum of these means; its standard error is
    √(s² · Σ w²/n) on `dof` = runs − configurations degrees of freedom, which
    is 0 without replication: then there is no error term and no interval.
    """

    factors: tuple[str, ...]
    mean: Mapping[Cell, float]
    n: Mapping[Cell, int]
    s2: float
    dof: int
    log: bool


def cell_means(df: pd.DataFrame, response: str, factors: Sequence[str],
               log: bool | None = None) -> CellMeans:
    """Fit the cell-means model. `log=None` chooses the log scale when every
    value is positive (the interval rule of `run_interval`)."""
    y = numeric_response(df, response)
    if log is None:
        log = bool((y > 0).all())
    if log:
        if (y <= 0).any():
            raise AnalysisError(f"log scale needs a positive response; {response!r} has "
                                "values <= 0")
        y = np.log(y)
    data = pd.DataFrame({f: df[f].astype(str).to_numpy() for f in factors})
    data["y"] = y.to_numpy()
    means: dict[Cell, float] = {}
    counts: dict[Cell, int] = {}
    sse = 0.0
    for key, g in _groups(data, list(factors)):
        v = g["y"].to_numpy(dtype=float)
        means[key] = float(np.mean(v))
        counts[key] = len(v)
        sse += float(np.sum((v - np.mean(v)) ** 2))
    dof = len(data) - len(means)
    s2 = sse / dof if dof > 0 else math.nan
    return CellMeans(tuple(factors), means, counts, s2, dof, log)


@dataclass(frozen=True)
class Contrast:
    """A weighted sum of cell means with its Student-t interval (on the
    model's scale: a log ratio when the model is on the log scale)."""

    estimate: float
    se: float
    dof: int
    low: float
    high: float


def cell_contrast(cm: CellMeans, weights: Mapping[Cell, float],
                  confidence: float = 0.95) -> Contrast:
    """Σ w·mean over the cells of `weights`, each of which must hold runs."""
    missing = [c for c in weights if c not in cm.mean]
    if missing:
        raise AnalysisError("no run in configuration " + ", ".join(
            f"{f}={v}" for f, v in zip(cm.factors, missing[0], strict=True)))
    est = float(sum(w * cm.mean[c] for c, w in weights.items()))
    if cm.dof <= 0 or not math.isfinite(cm.s2):
        return Contrast(est, math.nan, max(cm.dof, 0), math.nan, math.nan)
    se = math.sqrt(cm.s2 * sum(w * w / cm.n[c] for c, w in weights.items()))
    t = float(stats.t.ppf(1 - (1 - confidence) / 2, cm.dof))
    return Contrast(est, se, cm.dof, est - t * se, est + t * se)


def level_cells(cm: CellMeans, fixed: Mapping[str, str],
                levels: Mapping[str, Sequence[str]]) -> list[Cell]:
    """Every configuration with the `fixed` levels, the other factors taking
    each combination of their `levels`: the cells a marginal mean averages
    over with equal weight."""
    choices = [[fixed[f]] if f in fixed else list(levels[f]) for f in cm.factors]
    return [tuple(c) for c in itertools.product(*choices)]


def marginal_means(df: pd.DataFrame, response: str, factors: Sequence[str],
                   levels: Mapping[str, Sequence[str]] | None = None,
                   confidence: float = 0.95) -> pd.DataFrame:
    """Per factor and level: the mean over the design's configurations at that
    level, each configuration weighted equally (the estimated marginal mean),
    not the runs pooled as if different configurations were repeats.

    On the log scale (a geometric mean) when the response is positive in every
    run. The interval is the cell-means model's (pooled error), absent without
    replication or when a combination of the other factors' levels has no run.
    Columns: factor, level, configurations, runs, center, ci_low, ci_high, kind.
    """
    y = numeric_response(df, response)
    data = df.loc[y.index].assign(**{response: y})
    cm = cell_means(data, response, factors)
    if levels is None:
        levels = {f: ordered_levels(data[f]) for f in factors}
    rows: list[dict[str, Any]] = []
    for f in factors:
        for lv in levels[f]:
            cells = level_cells(cm, {f: lv}, levels)
            row: dict[str, Any] = {"factor": f, "level": lv,
                                   "configurations": sum(c in cm.mean for c in cells),
                                   "runs": sum(cm.n.get(c, 0) for c in cells),
                                   "kind": "geometric mean" if cm.log else "mean"}
            if row["configurations"] < len(cells):
                row.update(center=math.nan, ci_low=math.nan, ci_high=math.nan)
            else:
                k = cell_contrast(cm, {c: 1.0 / len(cells) for c in cells}, confidence)
                back = math.exp if cm.log else float
                row.update(center=back(k.estimate),
                           ci_low=back(k.low) if math.isfinite(k.low) else math.nan,
                           ci_high=back(k.high) if math.isfinite(k.high) else math.nan)
            rows.append(row)
    return pd.DataFrame(rows, columns=["factor", "level", "configurations", "runs", "center",
                                       "ci_low", "ci_high", "kind"])


def marginal_ratios(df: pd.DataFrame, response: str, factors: Sequence[str], factor: str,
                    levels: Mapping[str, Sequence[str]] | None = None,
                    confidence: float = 0.95) -> pd.DataFrame:
    """Every pair of `factor`'s levels compared through their marginal means
    (those of `marginal_means`): the contrast of the two levels' equally
    weighted configurations in the cell-means model, so that the other
    factors' configurations are averaged, never pooled as repeats.

    On the log scale (a ratio of geometric means) when the response is
    positive in every run, else a difference of means. The interval and the
    two-sided p are Student's t on the pooled run-to-run error; p is
    Holm-adjusted over the factor's pairs. Empty without replication or when
    a level lacks a configuration. Columns: a, b, center_a, center_b,
    estimate, ci_low, ci_high, p, p_holm, kind ("ratio" or "difference").
    """
    cols = ["a", "b", "center_a", "center_b", "estimate", "ci_low", "ci_high", "p",
            "p_holm", "kind"]
    y = numeric_response(df, response)
    data = df.loc[y.index].assign(**{response: y})
    cm = cell_means(data, response, factors)
    if levels is None:
        levels = {f: ordered_levels(data[f]) for f in factors}
    back = math.exp if cm.log else float
    rows: list[dict[str, Any]] = []
    for a, b in itertools.combinations(levels[factor], 2):
        ca, cb = (level_cells(cm, {factor: lv}, levels) for lv in (a, b))
        if cm.dof <= 0 or any(c not in cm.mean for c in ca + cb):
            return pd.DataFrame(columns=cols)
        w = {c: 1.0 / len(ca) for c in ca} | {c: -1.0 / len(cb) for c in cb}
        k = cell_contrast(cm, w, confidence)
        ma = sum(cm.mean[c] for c in ca) / len(ca)
        mb = sum(cm.mean[c] for c in cb) / len(cb)
        p = (float(2 * stats.t.sf(abs(k.estimate) / k.se, k.dof)) if k.se > 0
             else (1.0 if k.estimate == 0 else 0.0))
        rows.append({"a": a, "b": b, "center_a": back(ma), "center_b": back(mb),
                     "estimate": back(k.estimate), "ci_low": back(k.low),
                     "ci_high": back(k.high), "p": p,
                     "kind": "ratio" if cm.log else "difference"})
    out = pd.DataFrame(rows, columns=cols)
    if len(out):
        out["p_holm"] = multipletests(out["p"], method="holm")[1]
    return out


def replicated(df: pd.DataFrame, by: Sequence[str]) -> bool:
    """Whether some configuration has two or more runs: without that there is
    no error term, and no test or interval over runs can be computed."""
    if df.empty:
        return False
    if not by:
        return len(df) > 1
    return bool(df.groupby(list(by), observed=True).size().max() > 1)
