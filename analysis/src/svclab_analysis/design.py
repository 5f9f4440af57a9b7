"""Designed experiments: 2^k r factorial effects (Jain ch. 18) and ANOVA.

Both are fitted with statsmodels. With ±1 coding and a balanced design the
least-squares coefficients are exactly Jain's q values, the coefficient
standard errors are s_e / sqrt(2^k r), and the residual degrees of freedom
are 2^k (r - 1), so statsmodels' confidence intervals are Jain's.
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm

from .english import count
from .errors import AnalysisError


@dataclass(frozen=True)
class Coding:
    """How one factor was coded: `low` is -1, `high` is +1."""

    name: str
    low: str
    high: str


@dataclass
class Factorial:
    """A fitted 2^k r design.

    `terms` has one row per term named as statsmodels names them (`Intercept`,
    `A`, `B`, `A:B`, ..., `Residual`) with columns effect, ci_low, ci_high,
    sum_sq, df, percent; with log=True also ratio, ratio_low, ratio_high.
    `residuals` has the factor columns, the response, fitted and residual.
    """

    response: str
    factors: list[Coding]
    terms: pd.DataFrame
    residuals: pd.DataFrame
    log: bool
    confidence: float
    replications: int
    balanced: bool
    dof_error: int
    notes: list[str] = field(default_factory=list)


def numeric_response(df: pd.DataFrame, response: str) -> pd.Series:
    """The response as floats, or an AnalysisError naming the offending value."""
    if response not in df.columns:
        raise AnalysisError(
            f"no column {response!r}; columns are: {', '.join(map(str, df.columns))}"
        )
    col = df[response]
    y = pd.to_numeric(col, errors="coerce")
    bad = y.isna() & col.notna()
    if bad.any():
        first = col[bad].iloc[0]
        raise AnalysisError(
            f"response {response!r} is not numeric: {count(int(bad.sum()), 'value')} "
            f"such as {first!r}"
        )
    if y.isna().any():
        empty = count(int(y.isna().sum()), "empty value")
        raise AnalysisError(f"response {response!r} has {empty}")
    if len(y) == 0:
        raise AnalysisError(f"response {response!r} has no values")
    return y.astype(float)


def ordered_levels(col: pd.Series) -> list[str]:
    """Levels in a stable order: the categorical order, numeric order, or first seen.

    The first level is coded -1. Numeric levels sort numerically so that
    10 < 100 whatever order the rows came in.
    """
    if isinstance(col.dtype, pd.CategoricalDtype):
        present = set(col.dropna().astype(str))
        return [str(c) for c in col.cat.categories if str(c) in present]
    values = [str(v) for v in pd.unique(col.dropna())]
    nums = pd.to_numeric(pd.Series(values), errors="coerce")
    if not nums.isna().any():
        return [v for _, v in sorted(zip(nums, values, strict=True))]
    return values


def check_factors(df: pd.DataFrame, factors: Sequence[str]) -> None:
    if not factors:
        raise AnalysisError("no factors given")
    for f in factors:
        if f not in df.columns:
            raise AnalysisError(f"no column {f!r}; columns are: {', '.join(map(str, df.columns))}")
    if len(set(factors)) != len(factors):
        raise AnalysisError("a factor is named twice")


def _safe_names(factors: Sequence[str]) -> dict[str, str]:
    # Formulas cannot hold names like "deploy.transport"; fit on x0, x1, ...
    return {f: f"x{i}" for i, f in enumerate(factors)}


def _rename_term(term: str, back: Mapping[str, str]) -> str:
    parts = []
    for p in term.split(":"):
        m = re.fullmatch(r"C\((x\d+)(?:,.*)?\)", p)
        key = m.group(1) if m else p
        parts.append(back.get(key, p))
    return ":".join(parts)


def factorial(
    df: pd.DataFrame,
    response: str,
    factors: Sequence[str],
    levels: Mapping[str, Sequence[str]] | None = None,
    log: bool = False,
    confidence: float = 0.95,
    interactions: bool = True,
) -> Factorial:
    """2^k r factorial analysis of `response` over two-level `factors`.

    `levels` picks two levels of a factor that has more (the two-level subset
    of a larger design); rows at other levels are left out. With
    interactions=False only main effects are fitted, which is what a
    fractional design can estimate without its aliases.
    """
    check_factors(df, factors)
    if not 0 < confidence < 1:
        raise AnalysisError(f"confidence must be between 0 and 1, got {confidence}")
    levels = dict(levels or {})
    for f in levels:
        if f not in factors:
            raise AnalysisError(f"levels given for {f!r}, which is not among the factors")
    data = df.copy()
    codings: list[Coding] = []
    for f in factors:
        if data[f].isna().any():
            empty = count(int(data[f].isna().sum()), "empty value")
            raise AnalysisError(f"factor {f!r} has {empty}")
        present = ordered_levels(data[f])
        data[f] = data[f].astype(str)
        if f in levels:
            chosen = [str(v) for v in levels[f]]
            if len(chosen) != 2:
                raise AnalysisError(f"--levels {f}: give exactly two levels, got {len(chosen)}")
            for v in chosen:
                if v not in present:
                    raise AnalysisError(
                        f"factor {f!r} has no level {v!r}; levels are: {', '.join(present)}"
                    )
            data = data[data[f].isin(chosen)]
            present = chosen
        if len(present) < 2:
            only = present[0] if present else "none"
            raise AnalysisError(f"factor {f!r} has only one level ({only}); it needs two")
        if len(present) > 2:
            raise AnalysisError(
                f"factor {f!r} has {len(present)} levels ({', '.join(present)}); a 2^k design "
                f"needs two: pick them with --levels {f}=LOW,HIGH, or use `compare`/ANOVA"
            )
        codings.append(Coding(f, present[0], present[1]))

    y = numeric_response(data, response)
    if log:
        if (y <= 0).any():
            raise AnalysisError(f"--log needs a positive response; {response!r} has values <= 0")
        y = np.log(y)

    names = _safe_names(factors)
    back = {v: k for k, v in names.items()}
    fit_df = pd.DataFrame({"y": y.to_numpy()})
    for c in codings:
        fit_df[names[c.name]] = np.where(data[c.name].to_numpy() == c.high, 1.0, -1.0)

    k = len(codings)
    cells = fit_df.groupby([names[c.name] for c in codings]).size()
    if interactions and len(cells) < 2**k:
        missing = []
        for combo in itertools.product((-1.0, 1.0), repeat=k):
            key = combo if k > 1 else combo[0]
            if key not in cells.index:
                missing.append(", ".join(
                    f"{c.name}={c.high if v > 0 else c.low}"
                    for c, v in zip(codings, combo, strict=True)))
        raise AnalysisError(f"the 2^{k} design is incomplete: no rows for {missing[0]}")
    r_min, r_max = int(cells.min()), int(cells.max())
    notes: list[str] = []
    if r_min != r_max:
        notes.append(
            f"unbalanced design: {r_min} to {r_max} replications per cell; effects are "
            "least-squares estimates and sums of squares are sequential (type I)"
        )

    joiner = " * " if interactions else " + "
    formula = "y ~ " + joiner.join(names[c.name] for c in codings)
    model = ols(formula, data=fit_df).fit()
    dof = round(float(model.df_resid))
    params = model.params
    with warnings.catch_warnings():
        # r = 1 leaves no error degrees of freedom: statsmodels divides by zero.
        warnings.simplefilter("ignore", RuntimeWarning)
        table = anova_lm(model, typ=1)
        ci = model.conf_int(alpha=1 - confidence)
    if dof == 0:
        notes.append("one replication per cell: no error term, so no confidence intervals")
        ci.loc[:, :] = math.nan
        # Not 0: without replication the error is not measured, and "error
        # 0%" would read as runs that never vary.
        table.loc["Residual", "sum_sq"] = math.nan

    n = len(fit_df)
    rows = []
    ss0 = n * float(params["Intercept"]) ** 2
    rows.append(("Intercept", params["Intercept"], *ci.loc["Intercept"], ss0, 1.0))
    for term in table.index:
        if term == "Residual":
            continue
        rows.append((term, params[term], *ci.loc[term], table.loc[term, "sum_sq"],
                     table.loc[term, "df"]))
    rows.append(("Residual", math.nan, math.nan, math.nan, table.loc["Residual", "sum_sq"],
                 float(dof)))
    terms = pd.DataFrame(rows, columns=["term", "effect", "ci_low", "ci_high", "sum_sq", "df"])
    terms["effect"] = numerical_zero(terms["effect"], abs(float(params["Intercept"])))
    sst = terms.loc[terms["term"] != "Intercept", "sum_sq"].sum()
    terms["sum_sq"] = numerical_zero(terms["sum_sq"], sst)
    terms["percent"] = np.where(
        terms["term"] == "Intercept", math.nan, 100.0 * terms["sum_sq"] / sst if sst > 0 else 0.0
    )
    terms["term"] = [_rename_term(t, back) for t in terms["term"]]
    if log:
        # ±1 coding: high/low differ by 2q in log space, so exp(2q) is the ratio
        # high/low; the intercept's exp(q0) is the geometric mean.
        scale = np.where(terms["term"] == "Intercept", 1.0, 2.0)
        terms["ratio"] = np.exp(scale * terms["effect"])
        terms["ratio_low"] = np.exp(scale * terms["ci_low"])
        terms["ratio_high"] = np.exp(scale * terms["ci_high"])
    terms["df"] = terms["df"].astype(int)

    res = data[[c.name for c in codings]].reset_index(drop=True).copy()
    res[response] = y.to_numpy()
    res["fitted"] = model.fittedvalues.to_numpy()
    res["residual"] = model.resid.to_numpy()
    return Factorial(response, codings, terms, res, log, confidence, r_min, r_min == r_max,
                     dof, notes)


def numerical_zero(values: pd.Series, scale: float) -> pd.Series:
    """`values` with rounding residue set to exactly 0.

    Least squares on exactly balanced data leaves terms of 1e-16 of the data's
    scale where the true value is 0; printed, they read as findings, and their
    last digits change with the BLAS and library versions. Anything below 1e-12
    of `scale` is below what float64 arithmetic over a few thousand rows can
    resolve.
    """
    if not math.isfinite(scale) or scale == 0:
        return values
    return values.where(values.isna() | (values.abs() >= 1e-12 * abs(scale)), 0.0)


def anova(
    df: pd.DataFrame,
    response: str,
    factors: Sequence[str],
    log: bool = False,
) -> pd.DataFrame:
    """ANOVA for factors with any number of levels (type II sums of squares).

    Returns term, df, sum_sq, mean_sq, F, p and percent (eta squared, the
    share of the total sum of squares). Without replication the highest-order
    interaction is left out of the model and takes the residual's row, and F
    and p are NaN: that row is not run-to-run noise, so no term is tested.
    """
    check_factors(df, factors)
    data = df.copy()
    for f in factors:
        if data[f].isna().any():
            empty = count(int(data[f].isna().sum()), "empty value")
            raise AnalysisError(f"factor {f!r} has {empty}")
        n_levels = data[f].astype(str).nunique()
        if n_levels < 2:
            raise AnalysisError(f"factor {f!r} has only one level; it needs two or more")
    y = numeric_response(data, response)
    if log:
        if (y <= 0).any():
            raise AnalysisError(f"--log needs a positive response; {response!r} has values <= 0")
        y = np.log(y)
    names = _safe_names(factors)
    back = {v: k for k, v in names.items()}
    fit_df = pd.DataFrame({"y": y.to_numpy()})
    for f in factors:
        fit_df[names[f]] = data[f].astype(str).to_numpy()
    cells = fit_df.groupby([names[f] for f in factors]).ngroups
    terms = [f"C({names[f]})" for f in factors]
    if len(fit_df) > cells:
        rhs = " * ".join(terms)
    else:
        # No replication: keep interactions up to order k-1 as the model.
        rhs = " + ".join(
            ":".join(c)
            for order in range(1, len(terms))
            for c in itertools.combinations(terms, order)
        ) or "1"
    model = ols(f"y ~ {rhs}", data=fit_df).fit()
    if model.df_resid < 1:
        raise AnalysisError("too few rows for ANOVA: no degrees of freedom left for error")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        table = anova_lm(model, typ=2)
    table = table.rename(columns={"PR(>F)": "p"}).reset_index(names="term")
    total = table["sum_sq"].sum()
    table["sum_sq"] = numerical_zero(table["sum_sq"], total)
    # A sum of squares that is rounding residue carries no F either.
    table.loc[table["sum_sq"] == 0, "F"] = 0.0
    table["mean_sq"] = table["sum_sq"] / table["df"]
    table["percent"] = 100.0 * table["sum_sq"] / total if total > 0 else 0.0
    if len(fit_df) <= cells:
        # No replication: the "error" left is the highest-order interaction
        # (or, with one factor, the factor itself), not run-to-run noise, so
        # there is nothing to test a term against.
        table[["F", "p"]] = math.nan
        if len(factors) == 1:
            table.loc[table["term"] == "Residual", "term"] = terms[0]
            table = table[table["term"] != "Intercept"]
    table["term"] = [_rename_term(t, back) for t in table["term"]]
    table["df"] = table["df"].round().astype(int)
    return table[["term", "df", "sum_sq", "mean_sq", "F", "p", "percent"]]


def two_level_subsets(
    levels: Mapping[str, Sequence[str]], limit: int = 6
) -> list[dict[str, tuple[str, str]]]:
    """Two-level subsets of a mixed design: each multi-level factor's first level
    against each other level (S2's "default vs observability", "default vs mTLS").
    """
    multi = {f: list(v) for f, v in levels.items() if len(v) > 2}
    choices = [[(f, (v[0], other)) for other in v[1:]] for f, v in multi.items()]
    out = []
    for combo in itertools.product(*choices):
        out.append(dict(combo))
        if len(out) >= limit:
            break
    return out
