"""Factorial effects, allocation of variation and effect CIs on designs whose
values are derived by hand below (Jain, The Art of Computer Systems
Performance Analysis, ch. 17-18)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats

from svclab_analysis.design import anova, factorial, two_level_subsets
from svclab_analysis.errors import AnalysisError

# Jain's Example 18.1: a 2^2 design with r = 3 replications.
#
#   A  B   runs          cell mean
#   -  -   15 18 12      15
#   +  -   45 48 51      48
#   -  +   25 28 19      24
#   +  +   75 75 81      77
#
# Sign table on the cell means (2^k = 4 cells):
#   q0  = ( 15 + 48 + 24 + 77) / 4 = 164 / 4 = 41
#   qA  = (-15 + 48 - 24 + 77) / 4 =  86 / 4 = 21.5
#   qB  = (-15 - 48 + 24 + 77) / 4 =  38 / 4 = 9.5
#   qAB = ( 15 - 48 - 24 + 77) / 4 =  20 / 4 = 5
# Sums of squares, SS_x = 2^k r q_x^2 = 12 q_x^2:
#   SSA = 12 * 462.25 = 5547, SSB = 12 * 90.25 = 1083, SSAB = 12 * 25 = 300
#   SSE = sum of squared deviations from the cell means
#       = (0+9+9) + (9+0+9) + (1+16+25) + (4+4+16) = 18 + 18 + 42 + 24 = 102
#   SST = 5547 + 1083 + 300 + 102 = 7032
# Allocation: A 5547/7032 = 78.88%, B 15.40%, AB 4.27%, error 1.45%.
# CIs: s_e = sqrt(SSE / (2^k (r-1))) = sqrt(102 / 8) = 3.5707,
#      s_q = s_e / sqrt(2^k r) = 3.5707 / sqrt(12) = 1.0308,
#      90% -> t[0.95; 8] = 1.8595, half-width = 1.9168,
#      so qA is in (19.583, 23.417), as Jain's Example 18.3 gives.
JAIN = pd.DataFrame({
    "A": ["a1"] * 3 + ["a2"] * 3 + ["a1"] * 3 + ["a2"] * 3,
    "B": ["b1"] * 6 + ["b2"] * 6,
    "y": [15, 18, 12, 45, 48, 51, 25, 28, 19, 75, 75, 81],
})


def term(res, name: str) -> pd.Series:
    return res.terms.set_index("term").loc[name]


def test_jain_2x2r_effects_and_allocation() -> None:
    res = factorial(JAIN, "y", ["A", "B"], confidence=0.90)
    assert list(res.terms["term"]) == ["Intercept", "A", "B", "A:B", "Residual"]
    assert term(res, "Intercept")["effect"] == pytest.approx(41)
    assert term(res, "A")["effect"] == pytest.approx(21.5)
    assert term(res, "B")["effect"] == pytest.approx(9.5)
    assert term(res, "A:B")["effect"] == pytest.approx(5)
    assert term(res, "A")["sum_sq"] == pytest.approx(5547)
    assert term(res, "B")["sum_sq"] == pytest.approx(1083)
    assert term(res, "A:B")["sum_sq"] == pytest.approx(300)
    assert term(res, "Residual")["sum_sq"] == pytest.approx(102)
    assert term(res, "A")["percent"] == pytest.approx(100 * 5547 / 7032)
    assert term(res, "B")["percent"] == pytest.approx(100 * 1083 / 7032)
    assert term(res, "A:B")["percent"] == pytest.approx(100 * 300 / 7032)
    assert term(res, "Residual")["percent"] == pytest.approx(100 * 102 / 7032)
    assert res.terms["percent"].sum() == pytest.approx(100)  # NaN intercept skipped
    assert res.replications == 3 and res.dof_error == 8 and res.balanced


def test_jain_2x2r_effect_confidence_intervals() -> None:
    res = factorial(JAIN, "y", ["A", "B"], confidence=0.90)
    s_q = math.sqrt(102 / 8) / math.sqrt(12)
    half = stats.t.ppf(0.95, 8) * s_q
    assert half == pytest.approx(1.9168, abs=1e-4)
    for name, q in [("Intercept", 41), ("A", 21.5), ("B", 9.5), ("A:B", 5)]:
        assert term(res, name)["ci_low"] == pytest.approx(q - half)
        assert term(res, name)["ci_high"] == pytest.approx(q + half)
    assert term(res, "A")["ci_low"] == pytest.approx(19.583, abs=1e-3)


# A 2^3 design with r = 2, built from chosen effects so every number is known:
#   y = 50 + 10 xA - 5 xB + 2 xC + 3 xA xB + 0 xA xC - 1 xB xC + 0.5 xA xB xC
# Cell means (A varies fastest), e.g. (-,-,-): 50-10+5-2+3+0-1-0.5 = 44.5:
#   (-,-,-) 44.5  (+,-,-) 59.5  (-,+,-) 31.5  (+,+,-) 56.5
#   (-,-,+) 51.5  (+,-,+) 64.5  (-,+,+) 32.5  (+,+,+) 59.5
# Each cell's two runs are mean +1 and mean -1, so SSE = 8 cells * 2 * 1 = 16
# with 2^3 (2-1) = 8 degrees of freedom: s_e = sqrt(2), s_q = sqrt(2)/sqrt(16).
# SS_x = 2^3 * 2 * q^2 = 16 q^2: A 1600, B 400, C 64, AB 144, AC 0, BC 16,
# ABC 4; SST = 2228 + 16 = 2244, so A explains 1600/2244 = 71.30%.
CELL_MEANS_2x3 = [44.5, 59.5, 31.5, 56.5, 51.5, 64.5, 32.5, 59.5]
Q_2x3 = {"A": 10, "B": -5, "C": 2, "A:B": 3, "A:C": 0, "B:C": -1, "A:B:C": 0.5}


def design_2x3() -> pd.DataFrame:
    rows = []
    for i, mean in enumerate(CELL_MEANS_2x3):
        a, b, c = (i >> 0) & 1, (i >> 1) & 1, (i >> 2) & 1
        for d in (1.0, -1.0):
            rows.append({"A": ["lo", "hi"][a], "B": ["lo", "hi"][b], "C": ["lo", "hi"][c],
                         "y": mean + d})
    # Levels must be coded by name, not by row order: put a high level first.
    return pd.DataFrame(rows).iloc[::-1].reset_index(drop=True)


def test_2x3r_effects_allocation_and_ci() -> None:
    df = design_2x3()
    res = factorial(df, "y", ["A", "B", "C"], levels={"A": ["lo", "hi"], "B": ["lo", "hi"],
                                                      "C": ["lo", "hi"]})
    t = res.terms.set_index("term")
    assert t.loc["Intercept", "effect"] == pytest.approx(50)
    half = stats.t.ppf(0.975, 8) * math.sqrt(2) / 4
    for name, q in Q_2x3.items():
        assert t.loc[name, "effect"] == pytest.approx(q, abs=1e-9)
        assert t.loc[name, "sum_sq"] == pytest.approx(16 * q * q, abs=1e-9)
        assert t.loc[name, "percent"] == pytest.approx(100 * 16 * q * q / 2244, abs=1e-9)
        assert t.loc[name, "ci_low"] == pytest.approx(q - half)
        assert t.loc[name, "ci_high"] == pytest.approx(q + half)
    assert t.loc["Residual", "sum_sq"] == pytest.approx(16)
    assert t.loc["Residual", "df"] == 8
    assert t.loc["A", "percent"] == pytest.approx(71.30, abs=0.01)


def test_sums_of_squares_match_statsmodels_anova() -> None:
    df = design_2x3()
    res = factorial(df, "y", ["A", "B", "C"], levels={f: ["lo", "hi"] for f in "ABC"})
    # A column named C would shadow patsy's C(): fit the reference on D.
    ref = sm.stats.anova_lm(smf.ols("y ~ C(A) * C(B) * C(D)", data=df.rename(
        columns={"C": "D"})).fit(), typ=2)
    ours = res.terms.set_index("term")

    def ref_key(name: str) -> str:
        return ":".join(f"C({p.replace('C', 'D')})" for p in name.split(":"))

    for name in Q_2x3:
        key = ref_key(name)
        assert ours.loc[name, "sum_sq"] == pytest.approx(ref.loc[key, "sum_sq"], abs=1e-8)
    assert ours.loc["Residual", "sum_sq"] == pytest.approx(ref.loc["Residual", "sum_sq"])
    # And the ANOVA wrapper gives statsmodels' numbers under our term names.
    table = anova(df, "y", ["A", "B", "C"]).set_index("term")
    for name in Q_2x3:
        key = ref_key(name)
        assert table.loc[name, "sum_sq"] == pytest.approx(ref.loc[key, "sum_sq"], abs=1e-8)
        if ref.loc[key, "sum_sq"] > 1e-9:
            assert table.loc[name, "F"] == pytest.approx(ref.loc[key, "F"])


def test_jain_sums_of_squares_match_statsmodels() -> None:
    res = factorial(JAIN, "y", ["A", "B"])
    ref = sm.stats.anova_lm(smf.ols("y ~ C(A) * C(B)", data=JAIN).fit(), typ=1)
    assert term(res, "A")["sum_sq"] == pytest.approx(ref.loc["C(A)", "sum_sq"])
    assert term(res, "B")["sum_sq"] == pytest.approx(ref.loc["C(B)", "sum_sq"])
    assert term(res, "A:B")["sum_sq"] == pytest.approx(ref.loc["C(A):C(B)", "sum_sq"])


def test_log_effects_are_ratios() -> None:
    # Multiplicative cells: (-,-) 10, (+,-) 40, (-,+) 20, (+,+) 80; each cell's
    # two runs are mean*1.1 and mean/1.1, so the log cell means are exact.
    # qA = (-ln10 + ln40 - ln20 + ln80)/4 = (ln4 + ln4)/4 = ln(4)/2, so
    # exp(2 qA) = 4: A multiplies y by 4. B multiplies it by 2. qAB = 0.
    rows = []
    for a, b, m in [("a1", "b1", 10), ("a2", "b1", 40), ("a1", "b2", 20), ("a2", "b2", 80)]:
        rows += [{"A": a, "B": b, "y": m * 1.1}, {"A": a, "B": b, "y": m / 1.1}]
    res = factorial(pd.DataFrame(rows), "y", ["A", "B"], log=True)
    t = res.terms.set_index("term")
    assert t.loc["A", "effect"] == pytest.approx(math.log(4) / 2)
    assert t.loc["A", "ratio"] == pytest.approx(4)
    assert t.loc["B", "ratio"] == pytest.approx(2)
    assert t.loc["A:B", "ratio"] == pytest.approx(1)
    assert t.loc["Intercept", "ratio"] == pytest.approx(math.sqrt(math.sqrt(10 * 40 * 20 * 80)))
    assert t.loc["A", "ratio_low"] < 4 < t.loc["A", "ratio_high"]


def test_two_level_subset_of_a_larger_design() -> None:
    # S2-style: setup has three levels; "default vs obs" is the Jain data,
    # "mtls" rows must be left out.
    df = JAIN.copy()
    df["A"] = df["A"].map({"a1": "default", "a2": "obs"})
    extra = pd.DataFrame({"A": ["mtls"] * 6, "B": ["b1"] * 3 + ["b2"] * 3,
                          "y": [1000, 2000, 3000, 4000, 5000, 6000]})
    big = pd.concat([df, extra], ignore_index=True)
    with pytest.raises(AnalysisError, match="3 levels"):
        factorial(big, "y", ["A", "B"])
    res = factorial(big, "y", ["A", "B"], levels={"A": ["default", "obs"]})
    assert term(res, "A")["effect"] == pytest.approx(21.5)
    assert term(res, "A")["percent"] == pytest.approx(100 * 5547 / 7032)
    assert two_level_subsets({"A": ["default", "obs", "mtls"], "B": ["b1", "b2"]}) == [
        {"A": ("default", "obs")}, {"A": ("default", "mtls")}]


def test_unreplicated_design_has_no_error_term() -> None:
    df = JAIN.groupby(["A", "B"], as_index=False)["y"].mean()
    res = factorial(df, "y", ["A", "B"])
    assert term(res, "A")["effect"] == pytest.approx(21.5)
    assert math.isnan(term(res, "A")["ci_low"])
    assert term(res, "A")["percent"] == pytest.approx(100 * 462.25 / (462.25 + 90.25 + 25))
    assert res.dof_error == 0
    assert any("no confidence intervals" in n for n in res.notes)
    # No error term is not an error of 0%: its share is absent, not 0.
    assert math.isnan(term(res, "Residual")["percent"])
    assert math.isnan(term(res, "Residual")["sum_sq"])


def test_unbalanced_design_is_flagged() -> None:
    res = factorial(JAIN.iloc[1:], "y", ["A", "B"])
    assert not res.balanced
    assert any("unbalanced" in n for n in res.notes)
    assert res.terms["percent"].sum() == pytest.approx(100)


def test_main_effects_only_for_incomplete_designs() -> None:
    # A 2^(3-1) half fraction with C = AB: four of the eight cells.
    rows = []
    for a, b in itertools.product((-1, 1), repeat=2):
        c = a * b
        y = 10 + 3 * a + 2 * b + 1 * c
        rows += [{"A": a, "B": b, "C": c, "y": y + d} for d in (-0.5, 0.5)]
    df = pd.DataFrame(rows)
    with pytest.raises(AnalysisError, match="incomplete"):
        factorial(df, "y", ["A", "B", "C"])
    res = factorial(df, "y", ["A", "B", "C"], interactions=False)
    t = res.terms.set_index("term")
    assert t.loc["A", "effect"] == pytest.approx(3)
    assert t.loc["B", "effect"] == pytest.approx(2)
    assert t.loc["C", "effect"] == pytest.approx(1)


@pytest.mark.parametrize(
    ("df", "factors", "message"),
    [
        (JAIN, ["A", "Z"], "no column 'Z'"),
        (JAIN.assign(B="only"), ["A", "B"], "only one level"),
        (JAIN.assign(y=["x"] + [1] * 11), ["A", "B"], "not numeric"),
        (JAIN[JAIN["A"] == "a1"], ["A", "B"], "only one level"),
    ],
)
def test_bad_input(df: pd.DataFrame, factors: list[str], message: str) -> None:
    with pytest.raises(AnalysisError, match=message):
        factorial(df, "y", factors)


def test_anova_multilevel_percent_and_names() -> None:
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"deploy.transport": np.repeat(["grpc", "http", "netrpc"], 4),
                       "y": np.repeat([1.0, 2.0, 4.0], 4) + rng.normal(0, 0.1, 12)})
    table = anova(df, "y", ["deploy.transport"])
    assert list(table["term"]) == ["deploy.transport", "Residual"]
    ref = sm.stats.anova_lm(smf.ols("y ~ C(g)", data=df.rename(
        columns={"deploy.transport": "g"})).fit(), typ=2)
    assert table.loc[0, "sum_sq"] == pytest.approx(ref.loc["C(g)", "sum_sq"])
    assert table.loc[0, "p"] == pytest.approx(ref.loc["C(g)", "PR(>F)"])
    assert table["percent"].sum() == pytest.approx(100)


def test_rounding_residue_prints_as_zero() -> None:
    # Exactly additive, balanced data: the interaction and its sum of squares
    # are 0 in exact arithmetic, and least squares leaves ~1e-16 behind.
    rows = [
        {"a": a, "b": b, "y": 10.0 + (0.7 if a == "hi" else 0.0) + (0.3 if b == "hi" else 0.0)
         + e}
        for a in ("lo", "hi") for b in ("lo", "hi") for e in (-0.01, 0.01)
    ]
    df = pd.DataFrame(rows)
    fit = factorial(df, "y", ["a", "b"], levels={"a": ["lo", "hi"], "b": ["lo", "hi"]})
    inter = fit.terms.set_index("term").loc["a:b"]
    assert inter["effect"] == 0.0 and inter["sum_sq"] == 0.0
    main = fit.terms.set_index("term").loc["a"]
    assert main["effect"] == pytest.approx(0.35)
    assert math.isnan(fit.terms.set_index("term").loc["Residual", "effect"])
    table = anova(df, "y", ["a", "b"]).set_index("term")
    assert table.loc["a:b", "sum_sq"] == 0.0 and table.loc["a:b", "F"] == 0.0
    assert table.loc["a", "sum_sq"] == pytest.approx(8 * 0.35**2)
