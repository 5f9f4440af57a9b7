"""The ranking and the answer that reads it: one centre for both, and the
configurations the runs cannot tell from the best named with it.

The quickstart's report named one winner at 0.308 ms while rank 2 had the
same value and a median ratio of 0.888 (95% CI 0.610–1.85) to it: the order
came from geometric means, the ratio from medians, and nothing said the top
two were tied. Expected values come from scipy and statsmodels, never from
the code under test."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW
from stores import write_store
from test_report import section

from svclab_analysis.formatting import num
from svclab_analysis.report.analysis import (
    BOOTSTRAP_RESAMPLES,
    CONFIG,
    analyse,
    rank_configurations,
)
from svclab_analysis.report.document import build
from svclab_analysis.report.render import render_md
from svclab_analysis.results import load_experiment
from svclab_analysis.stats import center_ratio, describe

# Per-run p50 (ms). Rank 2's median (0.300) is below rank 1's (0.308) while its
# geometric mean (0.323) is above rank 1's (0.309): the quickstart's case.
TIED = {("monolith", "http"): [0.300, 0.308, 0.320],
        ("monolith", "grpc"): [0.250, 0.300, 0.450],
        ("split", "http"): [0.750, 0.780, 0.800],
        ("split", "grpc"): [0.950, 1.000, 1.050]}
CLEAR = {("monolith", "http"): [0.300, 0.310, 0.320],
         ("monolith", "grpc"): [0.400, 0.410, 0.420],
         ("split", "http"): [0.750, 0.780, 0.800],
         ("split", "grpc"): [0.950, 1.000, 1.050]}
FACTORS = [("deploy.placement", ["monolith", "split"]), ("deploy.transport", ["grpc", "http"])]


def label(cell: tuple[str, str]) -> str:
    return f"placement={cell[0]} · transport={cell[1]}"


def store(root: Path, p50: dict[tuple[str, str], list[float]], reps: int = 3) -> Path:
    def values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
        return {"total": {"p50_ms": p50[(lv["deploy.placement"], lv["deploy.transport"])]
                          [rep - 1]}}
    return write_store(root, "quickstart", FACTORS, values, reps=reps)


def answer_of(d: Path) -> tuple[str, list[list[str]]]:
    """The answer's paragraph and the ranking table's rows (header first)."""
    md = render_md(build(analyse(load_experiment(d))), "figures")
    blocks = section(md, "The answer").split("\n\n")
    table = next(b for b in blocks if b.startswith("| rank |"))
    rows = [ln.split(" | ") for ln in table.splitlines() if not ln.startswith("|---")]
    return blocks[1], rows


def welch_log_ratio(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """The ratio of geometric means a/b with statsmodels' Welch interval of
    ln a − ln b, back-transformed."""
    lo, hi = CompareMeans(DescrStatsW(np.log(a)), DescrStatsW(np.log(b))).tconfint_diff(
        alpha=0.05, usevar="unequal")
    return float(stats.gmean(a) / stats.gmean(b)), math.exp(lo), math.exp(hi)


def frame(p50: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    return pd.DataFrame([{CONFIG: label(c), "p50_ms": v} for c, vs in p50.items()
                         for v in vs])


# ---------------------------------------------------------------- the ranking


def test_lower_ranks_ratio_by_the_rankings_centre() -> None:
    df = frame(TIED)
    ranked = rank_configurations(df, "p50_ms", describe(df, ["p50_ms"], by=[CONFIG]),
                                 True, 0.95)
    assert list(ranked[CONFIG]) == [label(c) for c in TIED]
    # The old column divided medians: below 1 for rank 2, against the order.
    a, b = TIED[("monolith", "grpc")], TIED[("monolith", "http")]
    assert np.median(a) / np.median(b) < 1
    best = TIED[("monolith", "http")]
    assert ranked["ratio_to_best"].iloc[0] == 1.0
    for cell, row in zip(TIED, ranked.itertuples(), strict=True):
        if cell == ("monolith", "http"):
            continue
        ratio, lo, hi = welch_log_ratio(TIED[cell], best)
        assert row.ratio_to_best >= 1.0
        assert row.ratio_to_best == pytest.approx(ratio, rel=1e-12)
        assert (row.ratio_ci_low, row.ratio_ci_high) == pytest.approx((lo, hi), rel=1e-9)
    assert list(ranked["vs_best"]) == ["best", "tied", "worse", "worse"]


def test_higher_is_better_ratios_stay_at_or_below_one() -> None:
    rps = {("monolith", "http"): [980.0, 1000.0, 1020.0],
           ("monolith", "grpc"): [700.0, 1010.0, 1300.0],
           ("split", "http"): [500.0, 510.0, 520.0],
           ("split", "grpc"): [400.0, 405.0, 410.0]}
    df = pd.DataFrame([{CONFIG: label(c), "rps": v} for c, vs in rps.items() for v in vs])
    ranked = rank_configurations(df, "rps", describe(df, ["rps"], by=[CONFIG]), False, 0.95)
    assert ranked[CONFIG].iloc[0] == label(("monolith", "http"))
    assert (ranked["ratio_to_best"].iloc[1:] <= 1.0).all()
    ratio, lo, hi = welch_log_ratio(rps[("monolith", "grpc")], rps[("monolith", "http")])
    row = ranked.iloc[1]
    assert (row["ratio_to_best"], row["ratio_ci_low"], row["ratio_ci_high"]) == \
        pytest.approx((ratio, lo, hi), rel=1e-9)
    assert list(ranked["vs_best"]) == ["best", "tied", "worse", "worse"]


def test_center_ratio_matches_scipy() -> None:
    a, b = [0.25, 0.30, 0.45], [0.30, 0.308, 0.32]
    iv = center_ratio(np.array(a), np.array(b))
    ci = stats.ttest_ind(np.log(a), np.log(b), equal_var=False).confidence_interval(0.95)
    assert (iv.center, iv.low, iv.high) == pytest.approx(
        (stats.gmean(a) / stats.gmean(b), math.exp(ci.low), math.exp(ci.high)), rel=1e-12)
    assert (iv.kind, iv.method) == ("geometric mean", "log-welch")
    # A metric that is zero in some run: the ratio of means, bootstrapped.
    x, y = np.array([0.0, 0.4, 0.8, 1.0]), np.array([0.2, 0.3, 0.5, 0.6])
    iv = center_ratio(x, y, n_resamples=BOOTSTRAP_RESAMPLES)
    boot = stats.bootstrap((x, y), lambda p, q, axis=-1: np.mean(p, axis=axis)
                           / np.mean(q, axis=axis), vectorized=True, paired=False,
                           n_resamples=BOOTSTRAP_RESAMPLES, method="BCa",
                           rng=np.random.default_rng(0)).confidence_interval
    assert (iv.center, iv.low, iv.high) == pytest.approx(
        (np.mean(x) / np.mean(y), boot.low, boot.high), rel=1e-12)
    assert iv.kind == "mean"
    # One run: a ratio, no interval.
    one = center_ratio(np.array([0.4]), np.array(b))
    assert one.center == pytest.approx(0.4 / stats.gmean(b)) and math.isnan(one.low)
    assert one.method == "none"


# ---------------------------------------------------------------- the answer


def test_tie_names_the_group(tmp_path: Path) -> None:
    answer, rows = answer_of(store(tmp_path, TIED))
    best, second = ("monolith", "http"), ("monolith", "grpc")
    ratio, lo, hi = welch_log_ratio(TIED[second], TIED[best])
    assert lo < 1 < hi
    assert (f"**{label(best)}** and **{label(second)}** have the lowest p50 latency; the "
            f"runs cannot tell them apart (ratio {num(ratio)}×, 95% CI {num(lo)}–{num(hi)}×)."
            ) in answer
    ci = stats.ttest_1samp(np.log(TIED[best]), 0).confidence_interval(0.95)
    assert (f"**{label(best)}** ranks first: **{num(stats.gmean(TIED[best]))} ms** "
            f"(geometric mean of 3 runs, 95% CI {num(math.exp(ci.low))}–"
            f"{num(math.exp(ci.high))} ms).") in answer
    assert "has the lowest" not in answer
    # The table: every ratio below the best is ≥ 1, by the same centre.
    assert "geometric mean ÷ best (×, 95% CI)" in rows[0]
    assert rows[2][-3] == f"{num(ratio)} ({num(lo)}–{num(hi)})"
    assert all(float(r[-3].split(" ")[0]) >= 1 for r in rows[3:])


def test_clear_winner_names_one(tmp_path: Path) -> None:
    answer, _ = answer_of(store(tmp_path, CLEAR))
    best = CLEAR[("monolith", "http")]
    for cell, vals in CLEAR.items():
        if cell != ("monolith", "http"):
            assert welch_log_ratio(vals, best)[1] > 1  # every other interval excludes 1
    assert (f"**{label(('monolith', 'http'))}** has the lowest p50 latency: "
            f"**{num(stats.gmean(best))} ms**") in answer
    assert "cannot tell" not in answer and "not determinable" not in answer
    ratio, lo, hi = welch_log_ratio(CLEAR[("split", "grpc")], best)
    assert (f"The highest, {label(('split', 'grpc'))}, has "
            f"{num(stats.gmean(CLEAR[('split', 'grpc')]))} ms: its geometric mean is "
            f"{num(ratio)}× the best's (95% CI {num(lo)}–{num(hi)}×).") in answer


def test_several_tied_and_the_worst_among_them(tmp_path: Path) -> None:
    p50 = {"grpc": [0.30, 0.31, 0.32], "http": [0.28, 0.33, 0.36],
           "netrpc": [0.26, 0.34, 0.42]}
    d = write_store(tmp_path, "three", [("deploy.transport", list(p50))],
                    lambda lv, rep: {"total": {"p50_ms": p50[lv["deploy.transport"]][rep - 1]}},
                    reps=3)
    answer, _ = answer_of(d)
    order = sorted(p50, key=lambda k: stats.gmean(p50[k]))
    each = []
    for k in order[1:]:
        ratio, lo, hi = welch_log_ratio(p50[k], p50[order[0]])
        assert lo < 1 < hi
        each.append(f"{num(ratio)}×, 95% CI {num(lo)}–{num(hi)}×")
    names = [f"**transport={k}**" for k in order]
    assert (f"{names[0]}, {names[1]} and {names[2]} have the lowest p50 latency; the runs "
            "cannot tell them apart (ratios to the first, in that order: "
            + "; ".join(each) + ").") in answer
    # The worst is one of the tied: its ratio is said once, in the tie.
    assert "The highest" not in answer


def test_one_run_each_is_not_determinable(tmp_path: Path) -> None:
    answer, _ = answer_of(store(tmp_path, CLEAR, reps=1))
    best, worst = CLEAR[("monolith", "http")][0], CLEAR[("split", "grpc")][0]
    assert (f"**{label(('monolith', 'http'))}** has the lowest p50 latency: **{num(best)} ms** "
            "(1 run, no interval), but the ranking is not determinable: with one run per "
            "configuration there is no interval to tell it from the others.") in answer
    assert "cannot tell" not in answer and "not distinguishable" not in answer
    assert f"its geometric mean is {num(worst / best)}× the best's (no interval)" in answer


def test_a_configuration_with_one_run_is_not_determinable(tmp_path: Path) -> None:
    d = store(tmp_path, CLEAR)
    # Two of split · http's three runs fail: one run left, no interval.
    left = 0
    for rd in sorted((d / "runs").iterdir()):
        run = json.loads((rd / "run.json").read_text())
        if run["levels"] == {"deploy.placement": "split", "deploy.transport": "http"}:
            left += 1
            if left > 1:
                run.update(status="failed", reason="exited with status 2")
                (rd / "run.json").write_text(json.dumps(run))
    answer, _ = answer_of(d)
    assert f"**{label(('monolith', 'http'))}** has the lowest p50 latency: **" in answer
    assert (f"Against **{label(('split', 'http'))}** the ranking is not determinable: its "
            "ratio to the best has no interval, which needs two or more runs of each."
            ) in answer
