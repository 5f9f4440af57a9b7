"""Intervals the data can support (issue 33, section 3), each checked against
scipy or statsmodels."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.formula.api import ols

from svclab_analysis.stats import (
    cell_contrast,
    cell_means,
    describe,
    marginal_means,
    mean_ci,
    replicated,
    run_interval,
)

# The quickstart's p99 over three runs: spread enough that Student's t on the
# original scale reached below zero ("−15.3 to 31.7 ms").
WIDE = np.array([1.9, 3.1, 26.0])


def test_positive_interval_is_log_t_and_never_below_zero():
    lo_t, _ = mean_ci(WIDE)
    assert lo_t < 0  # the interval the report used to print
    iv = run_interval(WIDE, 0.95)
    ref = stats.ttest_1samp(np.log(WIDE), 0.0).confidence_interval(confidence_level=0.95)
    assert iv.method == "log-t" and iv.kind == "geometric mean"
    assert iv.center == pytest.approx(stats.gmean(WIDE))
    assert iv.low == pytest.approx(math.exp(ref.low))
    assert iv.high == pytest.approx(math.exp(ref.high))
    assert 0 < iv.low < iv.center < iv.high


def test_interval_with_a_zero_run_is_bca_inside_the_data():
    x = np.array([0.0, 0.0, 0.2, 0.1, 0.0, 0.4])
    iv = run_interval(x, 0.90, n_resamples=2000, seed=3)
    ref = stats.bootstrap((x,), np.mean, confidence_level=0.90, n_resamples=2000,
                          method="BCa", rng=np.random.default_rng(3)).confidence_interval
    assert iv.method == "bca" and iv.kind == "mean"
    assert (iv.low, iv.high) == pytest.approx((ref.low, ref.high))
    assert 0 <= iv.low <= iv.center <= iv.high <= x.max()


def test_one_run_has_no_interval_and_negative_values_keep_t():
    one = run_interval(np.array([4.0]))
    assert one.method == "none" and one.center == pytest.approx(4.0)
    assert math.isnan(one.low) and math.isnan(one.high)
    neg = run_interval(np.array([-1.0, 0.5, 2.0]))
    assert neg.method == "t"
    assert (neg.low, neg.high) == pytest.approx(mean_ci(np.array([-1.0, 0.5, 2.0])))


def test_describe_carries_the_rule_one_scale_per_metric():
    df = pd.DataFrame({"g": ["a"] * 3 + ["b"] * 3, "lat": [*WIDE, 2.0, 2.5, 3.0],
                       "err": [0.3, 0.1, 0.2, 0.0, 0.1, 0.2]})
    d = describe(df, ["lat", "err"], by=["g"]).set_index(["g", "metric"])
    a = d.loc[("a", "lat")]
    assert a["center_method"] == "log-t" and a["center_kind"] == "geometric mean"
    assert a["center_ci_low"] > 0
    # Student's t on the original scale is still there for its other readers.
    assert a["mean_ci_low"] < 0
    # One zero run puts the whole metric on the original scale, group a too:
    # a table's column holds one kind of centre.
    for g in ("a", "b"):
        e = d.loc[(g, "err")]
        assert e["center_kind"] == "mean" and e["center_method"] in ("bca", "percentile")
        assert e["center_ci_low"] >= 0
    assert d.loc[("a", "err"), "center"] == pytest.approx(0.2)


def unbalanced() -> pd.DataFrame:
    """A 2×2 design with 1 to 4 runs per configuration, multiplicative effects."""
    rng = np.random.default_rng(7)
    rows = []
    counts = {("x", "p"): 4, ("x", "q"): 1, ("y", "p"): 2, ("y", "q"): 3}
    for (a, b), n in counts.items():
        for _ in range(n):
            mu = 1.0 + 0.7 * (a == "y") + 1.5 * (b == "q")
            rows.append({"A": a, "B": b, "y": math.exp(mu + rng.normal(0, 0.2))})
    return pd.DataFrame(rows)


def test_marginal_means_weight_configurations_equally_against_statsmodels():
    df = unbalanced()
    mm = marginal_means(df, "y", ["A", "B"], confidence=0.95).set_index(["factor", "level"])
    fit = ols("np.log(y) ~ C(A):C(B) - 1", data=df).fit()
    names = list(fit.params.index)
    for f, lv in [("A", "x"), ("A", "y"), ("B", "p"), ("B", "q")]:
        contrast = np.array([0.5 if f"C({f})[{lv}]" in n else 0.0 for n in names])
        t = fit.t_test(contrast)
        lo, hi = t.conf_int(alpha=0.05)[0]
        row = mm.loc[(f, lv)]
        assert row["kind"] == "geometric mean"
        assert row["center"] == pytest.approx(math.exp(float(t.effect[0])))
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((math.exp(lo), math.exp(hi)))
    # Pooling the runs would weight x·p's four runs four times x·q's one.
    x = df[df["A"] == "x"]
    pooled = stats.gmean(x["y"])
    assert mm.loc[("A", "x"), "center"] != pytest.approx(pooled, rel=1e-3)


def test_marginal_means_without_replication_have_no_interval():
    df = pd.DataFrame(list(itertools.product(["x", "y"], ["p", "q"])), columns=["A", "B"])
    df["y"] = [1.0, 2.0, 3.0, 5.0]
    mm = marginal_means(df, "y", ["A", "B"])
    assert mm["ci_low"].isna().all() and mm["ci_high"].isna().all()
    assert mm.loc[0, "center"] == pytest.approx(math.sqrt(2.0))  # √(1·2)
    assert not replicated(df, ["A", "B"])
    assert replicated(unbalanced(), ["A", "B"])


def test_cell_contrast_matches_statsmodels_on_the_original_scale():
    df = unbalanced()
    cm = cell_means(df, "y", ["A", "B"], log=False)
    w = {("y", "p"): 0.5, ("y", "q"): 0.5, ("x", "p"): -0.5, ("x", "q"): -0.5}
    c = cell_contrast(cm, w, 0.9)
    fit = ols("y ~ C(A):C(B) - 1", data=df).fit()
    vec = np.array([w[(n.split("[")[1].split("]")[0], n.split("[")[2].split("]")[0])]
                    for n in fit.params.index])
    t = fit.t_test(vec)
    assert c.estimate == pytest.approx(float(t.effect[0]))
    assert c.se == pytest.approx(float(t.sd[0, 0]))
    assert (c.low, c.high) == pytest.approx(tuple(t.conf_int(alpha=0.1)[0]))
    assert c.dof == len(df) - 4
