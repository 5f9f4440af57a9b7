"""Run-level statistics against hand computations and scipy used directly."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import scikit_posthocs as sp
from scipy import stats
from statsmodels.stats.multitest import multipletests

from svclab_analysis.errors import AnalysisError
from svclab_analysis.stats import (
    cell_residuals,
    compare,
    describe,
    mann_whitney,
    marginal_ratios,
    qq_points,
    sample_size,
    shapiro,
)


def test_sample_size_s3_pilot_by_hand() -> None:
    # S3's method: a 10-value pilot, r = 5%, t(0.95; 9) = 1.833 (a two-sided
    # 90% interval). Pilot: 0.9 and 1.1 five times each, so
    #   mean = 1.0, s = sqrt(10 * 0.1^2 / 9) = sqrt(0.1/9) = 0.105409
    #   n = (100 * 1.833 * 0.105409 / (5 * 1.0))^2 = 3.8644^2 = 14.93 -> 15
    df = pd.DataFrame({"y": [0.9, 1.1] * 5})
    res = sample_size(df, "y", error_pct=5, confidence=0.90).iloc[0]
    assert res["t"] == pytest.approx(1.833, abs=5e-4)
    assert res["sd"] == pytest.approx(math.sqrt(0.1 / 9))
    assert (100 * 1.833 * math.sqrt(0.1 / 9) / 5) ** 2 == pytest.approx(14.93, abs=0.01)
    assert res["required"] == 15
    assert res["additional"] == 5
    # Current half-width: t s / (x̄ sqrt(n)) = 1.833 * 0.105409 / sqrt(10) = 6.11%.
    assert res["halfwidth_pct"] == pytest.approx(100 * 1.8331 * 0.105409 / math.sqrt(10),
                                                 rel=1e-3)


def test_sample_size_per_group() -> None:
    df = pd.DataFrame({"g": ["a"] * 4 + ["b"] * 4, "y": [1, 1.1, 0.9, 1, 10, 20, 30, 40]})
    res = sample_size(df, "y", by=["g"], error_pct=10).set_index("g")
    assert res.loc["b", "required"] > res.loc["a", "required"]
    with pytest.raises(AnalysisError, match="--error"):
        sample_size(df, "y", error_pct=0)


def test_describe_matches_scipy() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(10, 2, 12)
    df = pd.DataFrame({"g": "a", "y": x})
    d = describe(df, ["y"], by=["g"]).iloc[0]
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert d["mean_ci_low"] == pytest.approx(lo)
    assert d["mean_ci_high"] == pytest.approx(hi)
    assert d["median"] == pytest.approx(np.median(x))
    ci = stats.quantile_test(x, q=np.median(x), p=0.5).confidence_interval(0.95)
    assert d["median_ci_low"] == pytest.approx(ci.low)
    assert d["cv_pct"] == pytest.approx(100 * np.std(x, ddof=1) / x.mean())
    # Too few runs for a 95% order-statistic interval on the median.
    d3 = describe(df.head(3), ["y"]).iloc[0]
    assert math.isnan(d3["median_ci_low"]) and not math.isnan(d3["mean_ci_low"])


def test_mann_whitney_against_scipy() -> None:
    rng = np.random.default_rng(5)
    a = rng.lognormal(1.0, 0.2, 8)
    b = rng.lognormal(1.3, 0.2, 7)
    r = mann_whitney(a, b, seed=1)
    ref = stats.mannwhitneyu(a, b, alternative="two-sided")
    assert r["U"] == pytest.approx(ref.statistic)
    assert r["p"] == pytest.approx(ref.pvalue)
    # Rank-biserial from the definition: P(a > b) - P(a < b) over all pairs.
    pairs = [int(x > y) - int(x < y) for x in a for y in b]
    assert r["rank_biserial"] == pytest.approx(sum(pairs) / len(pairs))
    assert r["cles"] == pytest.approx(np.mean([(x > y) + 0.5 * (x == y) for x in a for y in b]))
    assert r["ratio"] == pytest.approx(np.median(a) / np.median(b))
    assert r["ratio_ci_low"] < r["ratio"] < r["ratio_ci_high"]
    ref_ci = stats.bootstrap(
        (a, b), lambda x, y, axis=-1: np.median(x, axis=axis) / np.median(y, axis=axis),
        vectorized=True, paired=False, n_resamples=9999, method="BCa",
        rng=np.random.default_rng(1)).confidence_interval
    assert r["ratio_ci_low"] == pytest.approx(ref_ci.low)
    assert r["ratio_ci_high"] == pytest.approx(ref_ci.high)


def test_mann_whitney_one_run_per_group_has_no_interval() -> None:
    # One run per configuration (repetitions = 1): the ratio of the two
    # values is all there is; a bootstrap of one value has no interval.
    r = mann_whitney(np.array([2.0]), np.array([4.0]), seed=1)
    assert r["ratio"] == pytest.approx(0.5)
    assert math.isnan(r["ratio_ci_low"]) and math.isnan(r["ratio_ci_high"])


def test_compare_multilevel_against_scipy_and_scikit_posthocs() -> None:
    rng = np.random.default_rng(9)
    df = pd.DataFrame({"impl": np.repeat(["go", "java", "python"], 6),
                       "y": np.concatenate([rng.normal(m, 0.3, 6) for m in (1, 1.5, 3)])})
    res = compare(df, "y", "impl", n_resamples=999)
    groups = [df.loc[df["impl"] == g, "y"] for g in ("go", "java", "python")]
    kw = stats.kruskal(*groups)
    assert res["kruskal"].iloc[0]["H"] == pytest.approx(kw.statistic)
    assert res["kruskal"].iloc[0]["p"] == pytest.approx(kw.pvalue)
    dunn = sp.posthoc_dunn(df, val_col="y", group_col="impl", p_adjust="holm")
    for row in res["dunn"].itertuples():
        assert row.p_holm == pytest.approx(dunn.loc[row.a, row.b])
    raw = [stats.mannwhitneyu(groups[i], groups[j]).pvalue
           for i, j in itertools.combinations(range(3), 2)]
    assert list(res["pairs"]["p"]) == pytest.approx(raw)
    assert list(res["pairs"]["p_holm"]) == pytest.approx(list(multipletests(raw, method="holm")[1]))


def test_compare_bad_input() -> None:
    df = pd.DataFrame({"g": ["a"] * 3, "y": [1, 2, 3]})
    with pytest.raises(AnalysisError, match="only one level"):
        compare(df, "y", "g")
    with pytest.raises(AnalysisError, match="no column 'h'"):
        compare(df, "y", "h")


def test_residual_checks_run_on_run_level_residuals() -> None:
    df = pd.DataFrame({"g": np.repeat(["a", "b"], 5),
                       "y": [1, 2, 3, 4, 5, 11, 12, 13, 14, 15.0]})
    res = cell_residuals(df, "y", ["g"])
    assert list(res) == [-2, -1, 0, 1, 2] * 2
    sw = shapiro(res)
    ref = stats.shapiro(res)
    assert sw["W"] == pytest.approx(ref.statistic) and sw["n"] == 10
    qq = qq_points(res)
    assert len(qq) == 10 and list(qq.columns) == ["theoretical", "sample", "line"]
    assert math.isnan(shapiro(np.array([1.0, 1.0]))["W"])


def test_marginal_ratios_match_statsmodels() -> None:
    # An unbalanced 3×2 design: pooling a level's runs would weight the
    # configuration with more runs more; the marginal contrast weights each
    # configuration equally. Checked against statsmodels' t test of the same
    # contrast in the cell-means OLS on log values.
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(3)
    rows = []
    for a, base in (("x", 2.0), ("y", 3.0), ("z", 5.0)):
        for b, mult in (("p", 1.0), ("q", 4.0)):
            for _ in range(2 if (a, b) == ("x", "p") else 4):
                rows.append({"A": a, "B": b, "v": base * mult * math.exp(rng.normal(0, 0.1))})
    df = pd.DataFrame(rows)
    got = marginal_ratios(df, "v", ["A", "B"], "A").set_index(["a", "b"])
    fit = smf.ols("np.log(v) ~ 0 + C(A):C(B)", data=df).fit()
    names = list(fit.params.index)

    def w(level: str, sign: float) -> np.ndarray:
        return np.array([sign / 2 if f"C(A)[{level}]" in n else 0.0 for n in names])

    raw = {}
    for a, b in (("x", "y"), ("x", "z"), ("y", "z")):
        t = fit.t_test(w(a, 1.0) + w(b, -1.0))
        lo, hi = np.asarray(t.conf_int(alpha=0.05))[0]
        r = got.loc[(a, b)]
        assert r["kind"] == "ratio"
        assert r["estimate"] == pytest.approx(math.exp(float(np.squeeze(t.effect))), rel=1e-9)
        assert r["ci_low"] == pytest.approx(math.exp(lo), rel=1e-9)
        assert r["ci_high"] == pytest.approx(math.exp(hi), rel=1e-9)
        assert r["p"] == pytest.approx(float(np.squeeze(t.pvalue)), rel=1e-6)
        raw[(a, b)] = float(np.squeeze(t.pvalue))
    # Holm over the factor's three pairs.
    holm = multipletests(list(raw.values()), method="holm")[1]
    assert list(got["p_holm"]) == pytest.approx(list(holm))
    # The ratio is not the pooled runs' ratio of geometric means.
    pooled = math.exp(np.log(df[df.A == "x"].v).mean() - np.log(df[df.A == "y"].v).mean())
    assert got.loc[("x", "y"), "estimate"] != pytest.approx(pooled, rel=1e-3)
    # Without replication there is no error term: no comparison.
    one = df.groupby(["A", "B"], as_index=False).first()
    assert marginal_ratios(one, "v", ["A", "B"], "A").empty
