"""Every number the report shows, computed from a results directory's runs.

Pure computation: no plotting and no text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..design import Factorial, anova, factorial, two_level_subsets
from ..errors import AnalysisError
from ..formatting import num, pval, with_unit
from ..metrics import CORE_METRICS, label_of, lower_is_better, unit_of
from ..questions import Answer, experiment_answers, is_sequential
from ..results import BOTTLENECK, RESOURCES, Experiment, load_role_cpu, response_table
from ..stats import (
    cell_residuals,
    center_ratio,
    compare,
    describe,
    marginal_means,
    marginal_ratios,
    replicated,
    sample_size,
    shapiro,
)
from . import tradeoff

CV_WARN_PCT = 10.0  # between-run CV above this: the runs disagree
MIN_RUNS = 3  # per configuration, for a usable interval
TARGET_ERROR_PCT = 5.0  # Jain's r in the sample-size advice
BOOTSTRAP_RESAMPLES = 4999
CONFIG = "configuration"

@dataclass
class Analysis:
    exp: Experiment
    metric: str
    operation: str
    confidence: float
    log: bool
    table: pd.DataFrame  # one row per ok run
    factors: list[str]  # factors that vary among the ok runs
    constants: dict[str, str]
    ranked: pd.DataFrame  # per configuration, best first; "flagged" counts its flagged runs
    per_metric: pd.DataFrame  # describe() per configuration, every metric
    per_level: dict[str, pd.DataFrame]
    replicated: bool = True  # some configuration has two or more runs: an error term
    marginal: pd.DataFrame = field(default_factory=pd.DataFrame)  # marginal_means()
    answers: list[Answer] = field(default_factory=list)  # the spec's questions
    sequential: bool = False  # experiment.until = "decided"
    main: Factorial | None = None
    main_kind: str = ""  # "factorial", "main-effects", "anova"
    anova_table: pd.DataFrame | None = None
    subsets: list[tuple[dict[str, tuple[str, str]], Factorial]] = field(default_factory=list)
    residuals: np.ndarray = field(default_factory=lambda: np.array([]))
    shapiro: dict[str, float] = field(default_factory=dict)
    pairwise: dict[str, dict[str, pd.DataFrame]] = field(default_factory=dict)
    level_ratios: dict[str, pd.DataFrame] = field(default_factory=dict)  # marginal_ratios()
    configs_compare: dict[str, pd.DataFrame] | None = None
    samplesize: pd.DataFrame | None = None
    warnings: list[str] = field(default_factory=list)
    figures: dict[str, bytes] = field(default_factory=dict)
    cdf_source: str = ""
    hops: pd.DataFrame = field(default_factory=pd.DataFrame)  # figures.top_hops, as drawn
    role_cpu: pd.DataFrame = field(default_factory=pd.DataFrame)  # role_cpu_summary
    flagged: set[str] = field(default_factory=set)  # run_id of the runs flagged_runs() names

    def cfg_headers(self) -> list[str]:
        if not self.factors:
            return ["configuration"]
        return list(short_names(self.factors).values())

    def cfg_cells(self, label: str) -> list[str]:
        if not self.factors:
            return [label]
        row = self.table.loc[self.table[CONFIG] == label, self.factors]
        return [str(v) for v in row.iloc[0]] if len(row) else [label]

    @property
    def unit(self) -> str:
        return unit_of(self.metric)

    @property
    def mlabel(self) -> str:
        return label_of(self.metric)


def short_names(factors: list[str]) -> dict[str, str]:
    shorts = {f: f.rsplit(".", 1)[-1] for f in factors}
    if len(set(shorts.values())) < len(shorts):
        return {f: f for f in factors}
    return shorts


def config_labels(df: pd.DataFrame, factors: list[str]) -> pd.Series:
    if not factors:
        return pd.Series(["all runs"] * len(df), index=df.index)
    sn = short_names(factors)
    out = sn[factors[0]] + "=" + df[factors[0]].astype(str)
    for f in factors[1:]:
        out = out + " · " + sn[f] + "=" + df[f].astype(str)
    return out.astype(object)


def flagged_runs(exp: Experiment) -> set[str]:
    """The ok runs the load generator's self-audit flagged as its own
    bottleneck: their latency holds the generator's lag. The ranking and the
    figures keep and mark them; the answers to the questions leave them out."""
    runs = exp.runs
    if runs.empty or "bottleneck" not in runs:
        return set()
    bad = (runs["status"] == "ok") & runs["bottleneck"].fillna(False).astype(bool)
    return {str(r) for r in runs.loc[bad, "run_id"]}


# How a configuration stands against the best (Analysis.ranked's vs_best).
BEST, WORSE, TIED, UNDETERMINED = "best", "worse", "tied", "undetermined"


def rank_configurations(tm: pd.DataFrame, m: str, cells: pd.DataFrame, ascending: bool,
                        confidence: float) -> pd.DataFrame:
    """`describe`'s rows per configuration (`cells`), best first by the centre
    the tables show (the geometric mean of a positive metric, stats.run_interval's
    rule), with each one's ratio to the best by that same centre: ratio_to_best
    (so ≥ 1 below the best of a lower-is-better metric, ≤ 1 of a higher-is-better
    one), its interval ratio_ci_low/high and method ratio_method
    (stats.center_ratio), and vs_best: "best", "worse" (the interval excludes
    1), "tied" (it includes 1: the runs cannot tell the two apart) or
    "undetermined" (no interval: too few runs)."""
    ranked = cells.sort_values("center", ascending=ascending, kind="stable").reset_index(
        drop=True)
    best = ranked.iloc[0]
    positive = str(best["center_kind"]) == "geometric mean"
    best_vals = tm.loc[tm[CONFIG] == best[CONFIG], m].to_numpy(dtype=float)
    ratio, low, high, method, vs = [], [], [], [], []
    for i, r in enumerate(ranked.itertuples()):
        if i == 0:
            ratio.append(1.0)
            low.append(math.nan)
            high.append(math.nan)
            method.append("none")
            vs.append(BEST)
            continue
        iv = center_ratio(tm.loc[tm[CONFIG] == getattr(r, CONFIG), m].to_numpy(dtype=float),
                          best_vals, confidence, positive=positive,
                          n_resamples=BOOTSTRAP_RESAMPLES)
        # The point is the ratio of the centres shown, so that it never
        # crosses 1 against the order: the same numbers, divided.
        ratio.append(float(r.center) / float(best["center"]) if best["center"] != 0
                     else math.nan)
        low.append(iv.low)
        high.append(iv.high)
        method.append(iv.method)
        if not (math.isfinite(iv.low) and math.isfinite(iv.high)):
            vs.append(UNDETERMINED)
        else:
            vs.append(TIED if iv.low <= 1.0 <= iv.high else WORSE)
    return ranked.assign(ratio_to_best=ratio, ratio_ci_low=low, ratio_ci_high=high,
                         ratio_method=method, vs_best=vs)


def analyse(exp: Experiment, log: bool = False, confidence: float = 0.95) -> Analysis:
    """Every number the report shows. Pure computation: no plotting."""
    m = exp.response_metric
    table = response_table(exp, exp.response_operation)
    if table[m].dropna().empty:
        raise AnalysisError(
            f"metric {m!r} has no value in any ok run of operation {exp.response_operation!r}"
        )
    factors, constants = [], {}
    for f in exp.factor_names:
        lv = table[f].dropna().astype(str).unique()
        if len(lv) >= 2:
            factors.append(f)
        elif len(lv) == 1:
            constants[f] = str(lv[0])
    table[CONFIG] = config_labels(table, factors)
    tm = table.dropna(subset=[m]).copy()

    cells = describe(tm, [m], by=[CONFIG], confidence=confidence)
    asc = lower_is_better(m)
    ranked = rank_configurations(tm, m, cells, asc, confidence)
    err = table.groupby(CONFIG, observed=True)["error_rate_pct"].mean()
    ranked["error_rate_pct"] = ranked[CONFIG].map(err)
    flagged = flagged_runs(exp)
    n_flagged = tm[tm["run_id"].isin(flagged)].groupby(CONFIG, observed=True).size()
    ranked["flagged"] = ranked[CONFIG].map(n_flagged).fillna(0).astype(int)

    metrics = [c for c in CORE_METRICS if c in table.columns]
    if m not in metrics:
        metrics.insert(0, m)
    per_metric = describe(table, metrics, by=[CONFIG], confidence=confidence)
    per_level = {f: describe(table, metrics, by=[f], confidence=confidence) for f in factors}

    a = Analysis(exp, m, exp.response_operation, confidence, log, table, factors, constants,
                 ranked, per_metric, per_level)
    a.flagged = flagged
    a.replicated = replicated(tm, [CONFIG])
    a.warnings += exp.notes
    try:
        a.sequential = is_sequential(exp.meta)
        a.answers = experiment_answers(exp, confidence)
    except AnalysisError as exc:
        # The runs are worth their report even when a question cannot be
        # read; `svclab-analysis decide` fails on it instead.
        a.warnings.append(f"the spec's questions are not answered: {exc}")
    if log and (tm[m] <= 0).any():
        a.warnings.append(f"log scale requested but {m} has values <= 0: analysed on the "
                          "original scale")
        a.log = log = False

    design_kind = str((exp.meta.get("design") or {}).get("kind") or "full")
    levels = {f: [str(v) for v in tm[f].dropna().unique()] for f in factors}
    if factors:
        order = {f: [lv for lv in exp.factors[exp.factor_names.index(f)].levels
                     if lv in levels[f]] for f in factors}
        a.marginal = marginal_means(tm, m, factors, order, confidence)
        two_level = all(len(v) == 2 for v in levels.values())
        if two_level:
            try:
                a.main = factorial(tm, m, factors, log=log, confidence=confidence)
                a.main_kind = "factorial"
            except AnalysisError:
                # A fractional design (or lost cells) cannot estimate every
                # interaction; main effects still can be.
                a.main = factorial(tm, m, factors, log=log, confidence=confidence,
                                   interactions=False)
                a.main_kind = "main-effects"
            a.warnings += a.main.notes
        else:
            a.anova_table = anova(tm, m, factors, log=log)
            a.main_kind = "anova"
            for subset in two_level_subsets(order):
                chosen = {f: list(v) for f, v in subset.items()}
                try:
                    fit = factorial(tm, m, factors, levels=chosen, log=log,
                                    confidence=confidence)
                except AnalysisError:
                    continue
                a.subsets.append((subset, fit))
        if design_kind == "fractional":
            aliases = (exp.meta.get("design") or {}).get("aliases") or []
            if aliases:
                a.warnings.append("fractional design: effects are confounded with their "
                                  "aliases (" + "; ".join(map(str, aliases)) + ")")

    if a.main is not None and a.main.dof_error > 0:
        a.residuals = a.main.residuals["residual"].to_numpy()
    else:
        y = np.log(tm[m]) if log else tm[m]
        a.residuals = cell_residuals(tm.assign(**{m: y}), m, [CONFIG] if factors else [])
    a.shapiro = shapiro(a.residuals)

    # Without replication a test would take different configurations for
    # repeats: there is no error term to test against. With other factors
    # varying, a level's runs are different configurations too: its levels
    # are compared through the marginal means (a.marginal) instead.
    for f in factors if a.replicated and len(factors) == 1 else []:
        try:
            a.pairwise[f] = compare(tm, m, f, confidence=confidence,
                                    n_resamples=BOOTSTRAP_RESAMPLES)
        except AnalysisError:
            continue
    for f in factors if a.replicated and len(factors) > 1 else []:
        lr = marginal_ratios(tm, m, factors, f, order, confidence)
        if not lr.empty:
            a.level_ratios[f] = lr
    if a.replicated and tm[CONFIG].nunique() > 2 and len(factors) > 1:
        a.configs_compare = compare(tm, m, CONFIG, confidence=confidence,
                                    n_resamples=BOOTSTRAP_RESAMPLES)
    if len(tm) > 1:
        a.samplesize = sample_size(tm, m, by=[CONFIG], error_pct=TARGET_ERROR_PCT,
                                   confidence=confidence)
    a.role_cpu = role_cpu_summary(exp, factors)
    a.warnings += checks(a)
    return a


# The roles of resources.parquet in the order a request meets them, the
# system under test's first; others (a future role) follow by name.
ROLE_ORDER = ("host", "sidecar", "node-proxy", "telemetry")
ROLE_LABELS = {"host": "hosts", "sidecar": "sidecars", "node-proxy": "node proxies",
               "telemetry": "telemetry backends"}


def role_cpu_summary(exp: Experiment, factors: list[str]) -> pd.DataFrame:
    """Per configuration and role: the runs, and the median over them of the
    role's CPU ms per request and memory (MiB, RSS and PSS). Empty when no run recorded
    roles (stores written before the role column)."""
    rc = load_role_cpu(exp)
    if rc.empty:
        return rc
    rc[CONFIG] = config_labels(rc, factors)
    out = rc.groupby([CONFIG, "role"], sort=False).agg(
        runs=("run_id", "nunique"), cpu_ms=("cpu_ms_per_request", "median"),
        rss_mb=("rss_mb", "median"), pss_mb=("pss_mb", "median"),
        processes=("processes", "median")).reset_index()
    rank = {r: i for i, r in enumerate(ROLE_ORDER)}
    out["_order"] = out["role"].map(lambda r: rank.get(r, len(rank)))
    return out.sort_values(["_order", "role"]).drop(columns="_order").reset_index(drop=True)


# Kinds of run warnings about the environment rather than the run (the
# kube deployer's note, internal/deploy/kube ResourceNote).
EXPERIMENT_WIDE = (RESOURCES,)


def checks(a: Analysis) -> list[str]:
    """The warnings a reader must see before trusting the numbers."""
    out: list[str] = []
    runs = a.exp.runs
    failed = runs[runs["status"] != "ok"]
    if not failed.empty:
        items = [f"{r.run_id} ({r.reason or 'no reason given'})" for r in failed.itertuples()]
        out.append(f"{len(failed)} of {len(runs)} runs failed and are left out: "
                   + "; ".join(items[:8]) + (" …" if len(items) > 8 else ""))
    if a.factors:
        present = set(a.table[CONFIG])
        # Configurations all of whose runs failed vanish from every table.
        lost = sorted(set(config_labels(runs[runs["status"] != "ok"], a.factors)) - present)
        for c in lost:
            out.append(f"{c}: no run finished ok, so it is missing from every table")
    bott = runs[(runs["status"] == "ok") & runs["bottleneck"]]
    for r in bott.itertuples():
        detail = next((w.text for w in r.warnings if w.kind == BOTTLENECK),
                      "the load generator flagged itself")
        out.append(f"run {r.run_id}: the load generator was the bottleneck ({detail}); its "
                   "latencies include the generator's own delay")
    ok = runs[runs["status"] == "ok"]
    # A cluster without the metrics API lacks every run's samples alike:
    # one line for the experiment, not one per run.
    alike: dict[str, int] = {}
    for r in ok.itertuples():
        for w in r.warnings:
            if w.kind in EXPERIMENT_WIDE:
                alike[w.text] = alike.get(w.text, 0) + 1
            elif w.kind != BOTTLENECK:
                out.append(f"run {r.run_id}: {w.text}")
    for w, k in alike.items():
        out.append(f"{w} ({'every run' if k == len(ok) else f'{k} of {len(ok)} runs'})")
    u = a.unit
    for c in a.ranked.itertuples():
        if c.n < MIN_RUNS:
            out.append(f"{getattr(c, CONFIG)}: only {c.n} ok run(s); {MIN_RUNS} or more are "
                       "needed for a usable confidence interval")
        elif c.cv_pct == c.cv_pct and c.cv_pct > CV_WARN_PCT:
            out.append(f"{getattr(c, CONFIG)}: runs disagree, coefficient of variation "
                       f"{num(c.cv_pct)}% of the mean {a.mlabel} ({with_unit(c.mean, u)}) "
                       f"> {CV_WARN_PCT:g}%")
    if a.samplesize is not None:
        req = a.samplesize["required"].max()
        have = int(a.ranked["n"].min())
        if req == req and req > have:
            out.append(f"Jain's estimate: {int(req)} runs per configuration give a "
                       f"±{TARGET_ERROR_PCT:g}% interval on the mean {a.mlabel} at "
                       f"{round(100 * a.confidence)}% confidence; the smallest configuration "
                       f"has {have}")
    errs = a.table[a.table["error_rate_pct"] > 0]
    if not errs.empty:
        out.append(f"{len(errs)} run(s) had errors (up to "
                   f"{num(errs['error_rate_pct'].max())}% of requests): fast failures can "
                   "make latency look better, so read latency beside the error rate")
    out += tradeoff.warnings(a.ranked, a.metric)
    sw = a.shapiro
    if sw and sw.get("p") == sw.get("p") and sw["p"] < 0.05:
        out.append(f"residuals are not normal (Shapiro-Wilk W = {sw['W']:.3f}, "
                   f"p = {pval(sw['p'])}): effect intervals are approximate"
                   + ("" if a.log else "; `--log` often helps latency"))
    y = a.table[a.metric].dropna()
    if not a.log and len(y) and y.min() > 0 and y.max() / y.min() > 10 and a.factors:
        out.append(f"{a.mlabel} spans more than a factor of ten: effects are likely "
                   "multiplicative, consider `--log`")
    return out


def term_significant(a: Analysis, term: str) -> bool | None:
    """Whether a term's effect is distinguishable from noise: its interval
    excludes zero (2^k r) or its ANOVA p is below 1 − confidence. None when
    there is no error term to judge by (no replication: the residual left is
    the highest interaction, not run-to-run noise)."""
    if not a.replicated:
        return None
    if a.main is not None:
        t = a.main.terms.set_index("term")
        if term not in t.index or not math.isfinite(float(t.loc[term, "ci_low"])):
            return None
        lo, hi = float(t.loc[term, "ci_low"]), float(t.loc[term, "ci_high"])
        return bool(lo > 0 or hi < 0)
    if a.anova_table is not None:
        t = a.anova_table.set_index("term")
        if term not in t.index or not math.isfinite(float(t.loc[term, "p"])):
            return None
        return bool(float(t.loc[term, "p"]) < 1 - a.confidence)
    return None
