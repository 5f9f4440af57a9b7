"""The report: compute everything (analyse), draw it (figures), then render the
same document model as self-contained HTML and as Markdown."""

from __future__ import annotations

import base64
import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import __version__, plots
from .design import Factorial, anova, factorial, two_level_subsets
from .errors import AnalysisError
from .load import (
    Experiment,
    hdr_quantiles,
    load_experiment,
    load_samples,
    load_timeseries,
    response_table,
)
from .metrics import CORE_METRICS, label_of, lower_is_better, unit_of
from .stats import (
    cell_residuals,
    compare,
    describe,
    mann_whitney,
    qq_points,
    sample_size,
    shapiro,
)

CV_WARN_PCT = 10.0  # between-run CV above this: the runs disagree
MIN_RUNS = 3  # per configuration, for a usable interval
TARGET_ERROR_PCT = 5.0  # Jain's r in the sample-size advice
BOOTSTRAP_RESAMPLES = 4999
CONFIG = "configuration"


# ---------------------------------------------------------------- formatting


def num(v: Any) -> str:
    """A number with as many digits as a reader can use."""
    if v is None:
        return "—"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(x):
        return "—"
    a = abs(x)
    if a == 0:
        return "0"
    if a >= 1000:
        s = f"{a:,.0f}"
    elif a >= 100:
        s = f"{a:.0f}"
    elif a >= 10:
        s = f"{a:.1f}"
    elif a >= 1:
        s = f"{a:.2f}"
    elif a >= 0.01:
        s = f"{a:.3f}"
    else:
        s = f"{a:.2g}"
    # A typographic minus: "−0.3–−0.1" would be unreadable with hyphens.
    return "−" + s if x < 0 else s


def seconds(v: Any) -> str:
    try:
        return f"{float(v):g} s"
    except (TypeError, ValueError):
        return "—"


def integer(v: Any) -> str:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return "—"
    return str(int(x)) if math.isfinite(x) else "—"


def with_unit(v: Any, unit: str) -> str:
    s = num(v)
    if s == "—" or not unit:
        return s
    return f"{s}%" if unit == "%" else f"{s} {unit}"


def ci(lo: Any, hi: Any, unit: str = "") -> str:
    if num(lo) == "—" or num(hi) == "—":
        return "—"
    u = "" if not unit else (unit if unit in ("%", "×") else f" {unit}")
    sep = " to " if float(lo) < 0 or float(hi) < 0 else "–"
    return f"{num(lo)}{sep}{num(hi)}{u}"


def pval(p: Any) -> str:
    try:
        x = float(p)
    except (TypeError, ValueError):
        return "—"
    if not math.isfinite(x):
        return "—"
    return "< 0.0001" if x < 1e-4 else f"{x:.4f}" if x < 0.001 else f"{x:.3f}"


# ---------------------------------------------------------------- document model


@dataclass
class Para:
    text: str
    cls: str = ""


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    caption: str = ""
    highlight_first: bool = False


@dataclass
class Figure:
    key: str
    caption: str


@dataclass
class Bullets:
    items: list[str]
    cls: str = ""


@dataclass
class Heading:
    text: str


Block = Para | Table | Figure | Bullets | Heading


@dataclass
class Section:
    key: str
    title: str
    blocks: list[Block] = field(default_factory=list)


# ---------------------------------------------------------------- analysis


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
    ranked: pd.DataFrame  # per configuration, best first
    per_metric: pd.DataFrame  # describe() per configuration, every metric
    per_level: dict[str, pd.DataFrame]
    main: Factorial | None = None
    main_kind: str = ""  # "factorial", "main-effects", "anova"
    anova_table: pd.DataFrame | None = None
    subsets: list[tuple[dict[str, tuple[str, str]], Factorial]] = field(default_factory=list)
    residuals: np.ndarray = field(default_factory=lambda: np.array([]))
    shapiro: dict[str, float] = field(default_factory=dict)
    pairwise: dict[str, dict[str, pd.DataFrame]] = field(default_factory=dict)
    configs_compare: dict[str, pd.DataFrame] | None = None
    samplesize: pd.DataFrame | None = None
    warnings: list[str] = field(default_factory=list)
    figures: dict[str, bytes] = field(default_factory=dict)
    cdf_source: str = ""

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
    ranked = cells.sort_values("mean", ascending=asc).reset_index(drop=True)
    best = ranked[CONFIG].iloc[0]
    best_vals = tm.loc[tm[CONFIG] == best, m].to_numpy()
    ratios = []
    for c in ranked[CONFIG]:
        if c == best:
            ratios.append((1.0, math.nan, math.nan))
            continue
        r = mann_whitney(tm.loc[tm[CONFIG] == c, m].to_numpy(), best_vals, confidence,
                         BOOTSTRAP_RESAMPLES)
        ratios.append((r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]))
    ranked["ratio_to_best"] = [r[0] for r in ratios]
    ranked["ratio_ci_low"] = [r[1] for r in ratios]
    ranked["ratio_ci_high"] = [r[2] for r in ratios]
    err = table.groupby(CONFIG, observed=True)["error_rate_pct"].mean()
    ranked["error_rate_pct"] = ranked[CONFIG].map(err)

    metrics = [c for c in CORE_METRICS if c in table.columns]
    if m not in metrics:
        metrics.insert(0, m)
    per_metric = describe(table, metrics, by=[CONFIG], confidence=confidence)
    per_level = {f: describe(table, metrics, by=[f], confidence=confidence) for f in factors}

    a = Analysis(exp, m, exp.response_operation, confidence, log, table, factors, constants,
                 ranked, per_metric, per_level)
    a.warnings += exp.notes
    if log and (tm[m] <= 0).any():
        a.warnings.append(f"log scale requested but {m} has values <= 0: analysed on the "
                          "original scale")
        a.log = log = False

    design_kind = str((exp.meta.get("design") or {}).get("kind") or "full")
    levels = {f: [str(v) for v in tm[f].dropna().unique()] for f in factors}
    if factors:
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
            order = {f: [lv for lv in exp.factors[exp.factor_names.index(f)].levels
                         if lv in levels[f]] for f in factors}
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

    for f in factors:
        try:
            a.pairwise[f] = compare(tm, m, f, confidence=confidence,
                                    n_resamples=BOOTSTRAP_RESAMPLES)
        except AnalysisError:
            continue
    if tm[CONFIG].nunique() > 2 and len(factors) > 1:
        a.configs_compare = compare(tm, m, CONFIG, confidence=confidence,
                                    n_resamples=BOOTSTRAP_RESAMPLES)
    if len(tm) > 1:
        a.samplesize = sample_size(tm, m, by=[CONFIG], error_pct=TARGET_ERROR_PCT,
                                   confidence=confidence)
    a.warnings += checks(a)
    return a


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
        have = set(a.table[CONFIG])
        # Configurations all of whose runs failed vanish from every table.
        lost = sorted(set(config_labels(runs[runs["status"] != "ok"], a.factors)) - have)
        for c in lost:
            out.append(f"{c}: no run finished ok, so it is missing from every table")
    bott = runs[(runs["status"] == "ok") & runs["bottleneck"]]
    for r in bott.itertuples():
        detail = next((w for w in r.warnings if w.startswith("generator_bottleneck")),
                      "the load generator flagged itself")
        out.append(f"run {r.run_id}: the load generator was the bottleneck ({detail}); its "
                   "latencies include the generator's own delay")
    for r in runs[runs["status"] == "ok"].itertuples():
        for w in r.warnings:
            if not w.startswith("generator_bottleneck"):
                out.append(f"run {r.run_id}: {w}")
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


# ---------------------------------------------------------------- figures


def figures(a: Analysis) -> dict[str, bytes]:
    """Draw every plot; a plot whose data is absent is left out."""
    figs: dict[str, bytes] = {}
    u = a.unit
    ylab = f"{a.mlabel} ({u})" if u else a.mlabel
    order = list(a.ranked[CONFIG])
    scale = "log " if a.log else ""
    if a.main is not None:
        figs["influence"] = plots.influence_bars(
            a.main.terms, f"What drives {scale}{a.mlabel}: allocation of variation")
    elif a.anova_table is not None:
        figs["influence"] = plots.influence_bars(
            a.anova_table, f"What drives {scale}{a.mlabel}: share of the sum of squares")
    figs["box"] = plots.boxplot(a.table, a.metric, CONFIG, order, ylab,
                            f"{a.mlabel} per run, by configuration")

    curves, a.cdf_source = latency_curves(a, order)
    if curves:
        figs["cdf"] = plots.cdf(curves, "latency (ms, log scale)",
                            f"Latency distribution ({a.operation})")
    ts = load_timeseries(a.exp)
    if not ts.empty and "operation" in ts.columns:
        ts = ts[ts["operation"] == a.operation].copy()
        col = a.metric if a.metric in ("p50_ms", "p90_ms", "p99_ms") else "p99_ms"
        if not ts.empty and col in ts.columns:
            ts[CONFIG] = config_labels(ts, a.factors)
            figs["timeseries"] = plots.timeseries(ts, CONFIG, order, col,
                                              f"{label_of(col)} (ms)", "Over time, per run")
    if len(a.factors) >= 2:
        figs["interactions"] = plots.interactions(
            a.table.dropna(subset=[a.metric]), a.factors[:4], a.metric, ylab,
            f"Interactions: mean {a.mlabel}")
    for f in a.factors:
        lv = pd.to_numeric(pd.Series(a.table[f].astype(str).unique()), errors="coerce")
        if len(lv) >= 3 and not lv.isna().any():
            others = [g for g in a.factors if g != f]
            d = describe(a.table.dropna(subset=[a.metric]), [a.metric], by=[f, *others],
                         confidence=a.confidence)
            d[f] = pd.to_numeric(d[f])
            d["series"] = config_labels(d, others) if others else ""
            figs[f"curve_{f}"] = plots.response_curve(
                d, f, "series" if others else None, f.rsplit(".", 1)[-1], ylab,
                f"{a.mlabel} against {f.rsplit('.', 1)[-1]} (mean, "
                f"{round(100 * a.confidence)}% CI)")
    if len(a.residuals) >= 3 and np.ptp(a.residuals) > 0:
        rl = f"residual ({'log ' + u if a.log else u})" if u else "residual"
        figs["qq"] = plots.qq(qq_points(a.residuals), rl, "Normal QQ plot of run residuals")
    return figs


def latency_curves(
    a: Analysis, order: list[str]
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], str]:
    """CDF curves per configuration from the best source available: raw
    samples, else HDR logs, else the percentiles in summary.json. Returns the
    curves and a phrase naming the source."""
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    samples = load_samples(a.exp, a.operation)
    if not samples.empty:
        samples[CONFIG] = config_labels(samples, a.factors)
        for c in order:
            x = np.sort(samples.loc[samples[CONFIG] == c, "latency_ms"].to_numpy())
            if len(x):
                curves[c] = (x, np.arange(1, len(x) + 1) / len(x))
        if curves:
            return curves, "from the per-request samples (samples.parquet)"
    qs = np.concatenate([np.linspace(0.0, 0.99, 100), [0.995, 0.999, 0.9999]])
    for c in order:
        dirs = a.table.loc[a.table[CONFIG] == c, "run_id"]
        paths = [Path(d) / "latency.hlog" for d in
                 a.exp.runs.set_index("run_id").loc[dirs, "dir"]]
        v = hdr_quantiles(paths, a.operation, qs)
        if v is not None:
            curves[c] = (v, qs)
    if curves:
        return curves, "from the HDR histogram logs (latency.hlog)"
    pcols = [("min_ms", 0.0), ("p50_ms", 0.5), ("p90_ms", 0.9), ("p95_ms", 0.95),
             ("p99_ms", 0.99), ("p999_ms", 0.999), ("max_ms", 1.0)]
    for c in order:
        rows = a.table[a.table[CONFIG] == c]
        pts = [(rows[col].median(), q) for col, q in pcols if col in rows and
               rows[col].notna().any()]
        if len(pts) >= 3:
            curves[c] = (np.array([p[0] for p in pts]), np.array([p[1] for p in pts]))
    return curves, ("only from the percentiles in summary.json (median over runs), so "
                    "approximate; `load.raw_samples = true` gives the full curve")


# ---------------------------------------------------------------- document


def _levels_phrase(subset: dict[str, tuple[str, str]]) -> str:
    return ", ".join(f"{f.rsplit('.', 1)[-1]}: {lo} vs {hi}" for f, (lo, hi) in subset.items())


def effects_table(fit: Factorial, unit: str) -> Table:
    conf = round(100 * fit.confidence)
    if fit.log:
        headers = ["term", "effect q (log)", "high/low ratio (×)", f"{conf}% CI of ratio (×)",
                   "variation explained (%)"]
    else:
        headers = ["term", f"effect q ({unit})", f"{conf}% CI ({unit})", "sum of squares",
                   "variation explained (%)"]
    rows = []
    for t in fit.terms.itertuples():
        name = "error (between runs)" if t.term == "Residual" else t.term
        if fit.log:
            ratio = "geometric mean " + with_unit(t.ratio, unit) if t.term == "Intercept" \
                else num(getattr(t, "ratio", math.nan))
            rows.append([name, num(t.effect), ratio,
                         ci(t.ratio_low, t.ratio_high, unit if t.term == "Intercept" else ""),
                         num(t.percent)])
        else:
            rows.append([name, num(t.effect), ci(t.ci_low, t.ci_high), num(t.sum_sq),
                         num(t.percent)])
    coding = "; ".join(f"{c.name}: −1 = {c.low}, +1 = {c.high}" for c in fit.factors)
    sig = ""
    if fit.dof_error > 0:
        sig = (f" An effect whose interval excludes {'1×' if fit.log else '0'} is "
               f"significant at {conf}% (t with {fit.dof_error} degrees of freedom).")
    return Table(headers, rows, caption=f"Coding: {coding}. r = {fit.replications} runs per "
                 f"configuration.{sig}")


def document(a: Analysis) -> list[Section]:
    u = a.unit
    conf = round(100 * a.confidence)
    exp = a.exp
    meta = exp.meta
    best = a.ranked.iloc[0]
    sections: list[Section] = []

    # ---- the answer
    s = Section("answer", "The answer")
    better = "lowest" if lower_is_better(a.metric) else "highest"
    n_cfg = len(a.ranked)
    best_ci = ci(best["mean_ci_low"], best["mean_ci_high"], u)
    text = (f"**{best[CONFIG]}** has the {better} mean {a.mlabel}: "
            f"**{with_unit(best['mean'], u)}** ({conf}% CI {best_ci}, {int(best['n'])} runs).")
    if n_cfg > 1:
        worst = a.ranked.iloc[-1]
        text += (f" The {'highest' if better == 'lowest' else 'lowest'}, {worst[CONFIG]}, "
                 f"has {with_unit(worst['mean'], u)}: its median is "
                 f"{num(worst['ratio_to_best'])}× the best's "
                 f"({conf}% CI {ci(worst['ratio_ci_low'], worst['ratio_ci_high'], '×')}).")
    terms = None
    if a.main is not None:
        terms = a.main.terms
    elif a.anova_table is not None:
        terms = a.anova_table
    if terms is not None:
        tt = terms[~terms["term"].isin(["Intercept", "Residual"])].sort_values(
            "percent", ascending=False)
        if not tt.empty:
            top = tt.iloc[0]
            err = terms.loc[terms["term"] == "Residual", "percent"]
            err_pct = float(err.iloc[0]) if len(err) else math.nan
            text += (f" **{top['term']}** explains {num(top['percent'])}% of the variation "
                     f"in {'log ' if a.log else ''}{a.mlabel}")
            text += (f"; differences between repeated runs explain {num(err_pct)}%."
                     if err_pct == err_pct else ".")
            # A share of variation is not evidence: say when the top term could
            # be noise, so the headline cannot overclaim.
            sig = term_significant(a, str(top["term"]))
            if sig is False:
                text += (f" That effect is not distinguishable from run-to-run noise at "
                         f"{conf}% confidence; more repetitions would settle it.")
            elif err_pct == err_pct and err_pct > float(top["percent"]):
                text += " Run-to-run noise outweighs every factor."
    s.blocks.append(Para(text, "answer"))
    rows = []
    for i, r in enumerate(a.ranked.itertuples(), start=1):
        rows.append([str(i), *a.cfg_cells(getattr(r, CONFIG)), num(r.mean),
                     ci(r.mean_ci_low, r.mean_ci_high),
                     num(r.median), "1 (best)" if i == 1 else
                     f"{num(r.ratio_to_best)} ({ci(r.ratio_ci_low, r.ratio_ci_high)})",
                     num(r.error_rate_pct), str(int(r.n))])
    s.blocks.append(Table(
        ["rank", *a.cfg_headers(), f"mean {a.metric.removesuffix('_ms')} ({u})",
         f"{conf}% CI ({u})", f"median ({u})", f"median ÷ best (×, {conf}% CI)",
         "errors (%)", "runs"],
        rows, caption=f"Operation {a.operation!r}. One value per run; the CI of the mean is "
        f"Student's t over runs, the ratio's CI a bootstrap over runs.", highlight_first=True))
    if "influence" in a.figures:
        s.blocks.append(Figure("influence", "Share of the variation in the headline metric "
                               "that each factor, each interaction and the run-to-run error "
                               "explain."))
    if a.main is not None:
        kind = "2^k r factorial design" if a.main_kind == "factorial" else \
            "main effects only (the design does not hold every combination)"
        s.blocks.append(Heading(f"Effects ({kind})"))
        s.blocks.append(effects_table(a.main, u))
    if a.anova_table is not None:
        s.blocks.append(Heading("ANOVA (type II sums of squares)"))
        s.blocks.append(Table(
            ["term", "df", "sum of squares", "F", "p", "variation explained (%)"],
            [["error (between runs)" if t.term == "Residual" else t.term, str(t.df),
              num(t.sum_sq), num(t.F), pval(t.p), num(t.percent)]
             for t in a.anova_table.itertuples()],
            caption="Factors with more than two levels: ANOVA on run-level values."))
        for subset, fit in a.subsets:
            s.blocks.append(Heading(f"2^k r effects on the two-level subset "
                                    f"({_levels_phrase(subset)})"))
            s.blocks.append(effects_table(fit, u))
    sections.append(s)

    # ---- design and environment
    s = Section("design", "Design and environment")
    d = meta.get("design") or {}
    host = meta.get("host") or {}
    n_ok = int((exp.runs["status"] == "ok").sum())
    mem_gib = with_unit(float(host.get("memory_bytes") or math.nan) / 2**30, "GiB")
    items = [
        f"Experiment **{meta.get('name') or exp.path.name}**, started "
        f"{meta.get('created') or '—'}, svclab {meta.get('svclab_version') or '—'} "
        f"({meta.get('svclab_commit') or '—'}), spec {meta.get('spec_path') or '—'}.",
        f"Design: {d.get('kind') or 'full'} factorial, run order {d.get('order') or '—'} "
        f"(seed {meta.get('seed', '—')}), {d.get('repetitions', '—')} repetitions; "
        f"warm-up {seconds(d.get('warmup_s'))}, measurement "
        f"{seconds(d.get('duration_s'))}, cool-down {seconds(d.get('cooldown_s'))}"
        " per run.",
        f"Runs: {len(exp.runs)} in the store, {n_ok} ok, {len(exp.runs) - n_ok} failed.",
        f"Headline: {a.mlabel} ({a.metric}) of operation {a.operation!r}"
        + (", analysed on the log scale." if a.log else "."),
        f"Host: {host.get('hostname') or '—'}, {host.get('cpu_model') or '—'}, "
        f"{host.get('cores', '—')} cores, {mem_gib} "
        f"memory, {host.get('os') or '—'} {host.get('kernel') or ''}, "
        f"{host.get('go_version') or ''}.".replace(" ,", ","),
    ]
    s.blocks.append(Bullets(items))
    if exp.factors:
        s.blocks.append(Table(
            ["letter", "factor", "levels", "in the analysis"],
            [[f.letter, f.name, ", ".join(f.levels),
              "yes" if f.name in a.factors else f"no (one level: {a.constants.get(f.name, '—')})"]
             for f in exp.factors]))
    sections.append(s)

    # ---- per-metric tables
    s = Section("metrics", "Per-metric tables")
    s.blocks.append(Para(f"Each run gives one value per metric; the tables summarise runs. "
                         f"Intervals are {conf}%: Student's t for the mean, order statistics "
                         f"for the median (which need 6 or more runs; — otherwise)."))
    for metric in a.per_metric["metric"].unique():
        mu = unit_of(metric)
        dm = a.per_metric[a.per_metric["metric"] == metric].set_index(CONFIG).reindex(
            a.ranked[CONFIG]).reset_index()
        if dm["n"].fillna(0).sum() == 0:
            continue
        s.blocks.append(Heading(f"{label_of(metric)} ({mu})"))
        has_mci = dm["median_ci_low"].notna().any()
        # A long unit in every header would push the table off the page: the
        # heading and the caption state it once instead.
        hu = f" ({mu})" if len(mu) <= 5 else ""
        s.blocks.append(Table(
            [*a.cfg_headers(), "runs", f"mean{hu}", f"{conf}% CI{hu}", f"median{hu}",
             *([f"{conf}% CI{hu}"] if has_mci else []), f"sd{hu}", "CV (%)"],
            [[*a.cfg_cells(getattr(r, CONFIG)), integer(r.n), num(r.mean),
              ci(r.mean_ci_low, r.mean_ci_high), num(r.median),
              *([ci(r.median_ci_low, r.median_ci_high)] if has_mci else []), num(r.sd),
              num(r.cv_pct)]
             for r in dm.itertuples()],
            caption="" if hu else f"All values in {mu} except the CV."))
    if a.per_level:
        s.blocks.append(Heading(f"{a.mlabel} per factor level ({u})"))
        rows = []
        for f, dl in a.per_level.items():
            for r in dl[dl["metric"] == a.metric].itertuples():
                rows.append([f, str(r._1), str(int(r.n)), num(r.mean),
                             ci(r.mean_ci_low, r.mean_ci_high), num(r.median)])
        s.blocks.append(Table(["factor", "level", "runs", f"mean ({u})", f"{conf}% CI ({u})",
                               f"median ({u})"], rows,
                              caption="Pooled over the other factors' levels."))
    if a.samplesize is not None:
        s.blocks.append(Heading("Sample size (Jain)"))
        s.blocks.append(Table(
            [*a.cfg_headers(), "runs", f"mean ({u})", f"sd ({u})",
             "current ±half-width (% of mean)", f"runs for ±{TARGET_ERROR_PCT:g}%"],
            [[*a.cfg_cells(getattr(r, CONFIG)), str(int(r.n)), num(r.mean), num(r.sd),
              num(r.halfwidth_pct),
              integer(r.required)] for r in a.samplesize.set_index(CONFIG).reindex(
                  a.ranked[CONFIG]).reset_index().itertuples()],
            caption=f"n = (100·t·s / (r·x̄))² with r = {TARGET_ERROR_PCT:g}% and t the "
            f"{conf}% Student quantile on the runs so far."))
    sections.append(s)

    # ---- plots
    s = Section("plots", "Plots")
    captions = {
        "box": f"{a.mlabel} of every run ({u}); boxes show quartiles over runs.",
        "cdf": f"Latency CDF per configuration, requests of all its runs pooled, "
               f"{a.cdf_source}. It describes the distribution only; no test uses "
               "per-request data.",
        "timeseries": "Per-second latency and throughput of every run, one line per run.",
        "interactions": f"Mean {a.mlabel} ({u}); lines that are not parallel show an "
                        "interaction.",
        "qq": "Run-level residuals against a normal distribution; points near the line "
              "support the t-based intervals.",
    }
    for key in ["box", "cdf", "timeseries", "interactions"]:
        if key in a.figures:
            s.blocks.append(Figure(key, captions[key]))
    for key in a.figures:
        if key.startswith("curve_"):
            s.blocks.append(Figure(key, f"Mean {a.mlabel} ({u}) with its {conf}% CI against "
                                        f"{key[6:]}."))
    if "qq" in a.figures:
        s.blocks.append(Figure("qq", captions["qq"]))
    sw = a.shapiro
    if sw and sw.get("W") == sw.get("W"):
        s.blocks.append(Para(f"Shapiro-Wilk on the {sw['n']} run residuals: W = {sw['W']:.3f}, "
                             f"p = {pval(sw['p'])}."))
    sections.append(s)

    # ---- pairwise
    s = Section("pairwise", "Pairwise comparisons")
    s.blocks.append(Para(
        f"Mann-Whitney U on run-level {a.mlabel}, p Holm-adjusted within each factor. "
        "Rank-biserial r runs from −1 to 1 and is positive when A's runs tend to be higher. "
        f"The ratio is median(A) ÷ median(B) with a {conf}% bootstrap CI. With few runs the "
        "smallest possible p is large (0.1 with 3 runs against 3): read the effect size."))
    for f, res in a.pairwise.items():
        pr = res["pairs"]
        s.blocks.append(Heading(f"{f} (pooled over the other factors)"))
        s.blocks.append(_pairs_table(pr, u))
        if "kruskal" in res:
            kw = res["kruskal"].iloc[0]
            s.blocks.append(Para(f"Kruskal-Wallis H = {num(kw['H'])}, df = {int(kw['df'])}, "
                                 f"p = {pval(kw['p'])}."))
    if a.configs_compare is not None:
        cc = a.configs_compare
        s.blocks.append(Heading("Between configurations"))
        if "kruskal" in cc:
            kw = cc["kruskal"].iloc[0]
            s.blocks.append(Para(f"Kruskal-Wallis across all {len(a.ranked)} configurations: "
                                 f"H = {num(kw['H'])}, df = {int(kw['df'])}, "
                                 f"p = {pval(kw['p'])}. Dunn's test, Holm-adjusted:"))
            dunn = cc["dunn"].merge(cc["pairs"][["a", "b", "ratio", "ratio_ci_low",
                                                 "ratio_ci_high", "rank_biserial"]],
                                    on=["a", "b"])
            def values(label: str) -> str:
                return " · ".join(a.cfg_cells(label))

            s.blocks.append(Table(
                ["A", "B", "Dunn p (Holm)", "rank-biserial r", "median ratio A/B (×)",
                 f"{conf}% CI (×)"],
                [[values(r.a), values(r.b), pval(r.p_holm), num(r.rank_biserial),
                  num(r.ratio), ci(r.ratio_ci_low, r.ratio_ci_high)]
                 for r in dunn.itertuples()],
                caption="Configurations as " + " · ".join(a.cfg_headers()) + "."))
    if len(s.blocks) == 1:
        s.blocks.append(Para("Nothing to compare: the runs have one configuration."))
    sections.append(s)

    # ---- warnings
    s = Section("warnings", "Warnings")
    s.blocks.append(Bullets(a.warnings, "warn") if a.warnings else Para("None."))
    sections.append(s)

    # ---- methods
    s = Section("methods", "Methods")
    s.blocks.append(Bullets(methods_text(a)))
    sections.append(s)
    return sections


def term_significant(a: Analysis, term: str) -> bool | None:
    """Whether a term's effect is distinguishable from noise: its interval
    excludes zero (2^k r) or its ANOVA p is below 1 − confidence. None when
    there is no error term to judge by."""
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


def _pairs_table(pr: pd.DataFrame, u: str) -> Table:
    return Table(
        ["A", "B", "runs A/B", f"median A ({u})", f"median B ({u})", "U", "p (Holm)",
         "rank-biserial r", "median ratio A/B (×)", "CI (×)"],
        [[r.a, r.b, f"{r.n_a}/{r.n_b}", num(r.median_a), num(r.median_b), num(r.U),
          pval(r.p_holm), num(r.rank_biserial), num(r.ratio), ci(r.ratio_ci_low, r.ratio_ci_high)]
         for r in pr.itertuples()])


def methods_text(a: Analysis) -> list[str]:
    conf = round(100 * a.confidence)
    return [
        "**The run is the unit of replication.** Each run is reduced to one value per metric "
        "(p50, p95, p99 and mean latency from the run's HDR histogram, throughput as served "
        "requests per second, error rate, CPU seconds of the system under test per 1000 "
        "requests). Requests within a run share the same process, caches and neighbours, so "
        "they are not independent; tests on them would find every difference significant. "
        "Per-request samples appear only in the CDF.",
        f"**Intervals.** The mean's {conf}% interval uses Student's t over runs; the median's "
        "is distribution-free, from order statistics; ratios of medians use a bootstrap "
        "(BCa, percentile when BCa degenerates) over runs.",
        "**Factorial designs** (Jain, ch. 18). Each two-level factor is coded −1/+1; the effect "
        "q is half the difference between the high and the low level's means. Each term's sum "
        "of squares is 2^k·r·q², and its share of the total is the 'variation explained'. "
        "Effect intervals use s_e/√(2^k·r) with a t quantile on 2^k(r−1) degrees of freedom. "
        "On the log scale effects become ratios: exp(2q) is the high/low ratio.",
        "**More than two levels.** ANOVA with type II sums of squares (statsmodels), and "
        "two-level subsets (the first level against each other) analysed as 2^k r designs. "
        "Kruskal-Wallis with Dunn's post-hoc test and Holm's correction does not assume "
        "normality.",
        "**Pairs.** Mann-Whitney U on run values, Holm-adjusted; rank-biserial correlation as "
        "the effect size.",
        "**Checks.** Shapiro-Wilk and the QQ plot use run-level residuals, never per-request "
        f"data. Warnings flag between-run CV above {CV_WARN_PCT:g}%, fewer than {MIN_RUNS} runs "
        "per configuration, failed runs, errors, and runs where the load generator was the "
        "bottleneck.",
        f"**Sample size.** Jain's n = (100·t·s / (r·x̄))² with r = {TARGET_ERROR_PCT:g}%: the "
        "runs per configuration needed for a ±r% interval on the mean.",
        f"Computed by svclab-analysis {__version__} with scipy, statsmodels and "
        "scikit-posthocs.",
    ]


# ---------------------------------------------------------------- rendering


def _inline(text: str) -> str:
    """Escape, then turn **bold** and `code` into HTML."""
    t = html.escape(text)
    t = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", t)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", t)


_NUMERIC = re.compile(
    r"^(?:[<−-]?\s?[\d,.]+(?:%|×)?(?:(?:–| to )−?[\d,.]+)?(?:\s?[×%]|\s[^\s\d]\S*)?"
    r"(?:\s\(.*\))?|—|1 \(best\))$"
)

CSS = """
:root{--ink:#1f2933;--muted:#616e7c;--line:#e4e7eb;--bg:#fff;--accent:#0072B2;
--soft:#f5f7fa;--warn:#b44d12;--warnbg:#fff8f1}
*{box-sizing:border-box}
body{margin:0;background:var(--soft);color:var(--ink);
font:15px/1.55 -apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,"Helvetica Neue",
"DejaVu Sans",Arial,sans-serif}
main{max-width:1000px;margin:0 auto;padding:32px 28px 64px;background:var(--bg);
min-height:100vh;box-shadow:0 0 0 1px var(--line)}
header h1{font-size:26px;margin:0 0 4px;letter-spacing:-.01em}
header p{margin:0;color:var(--muted);font-size:13px}
nav{margin:18px 0 8px;display:flex;flex-wrap:wrap;gap:6px}
nav a{font-size:13px;color:var(--accent);text-decoration:none;padding:3px 10px;
border:1px solid var(--line);border-radius:999px}
nav a:hover{background:var(--soft)}
h2{font-size:19px;margin:38px 0 12px;padding-top:14px;border-top:1px solid var(--line)}
h3{font-size:15px;margin:24px 0 8px}
p.answer{font-size:17px;line-height:1.6;background:#eef6fc;border-left:4px solid var(--accent);
padding:14px 18px;margin:12px 0 18px;border-radius:0 6px 6px 0}
table{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0 4px;
font-variant-numeric:tabular-nums}
th{text-align:left;font-weight:600;color:var(--muted);border-bottom:2px solid var(--line);
padding:6px 8px;vertical-align:bottom}
td{padding:5px 8px;border-bottom:1px solid var(--line)}
td.n,th.n{text-align:right;white-space:nowrap}
td{white-space:nowrap}
tr.best td{background:#eef6fc;font-weight:600}
.tablewrap{overflow-x:auto}
.caption{color:var(--muted);font-size:12.5px;margin:4px 0 14px}
figure{margin:14px 0 22px}
figure img{max-width:100%;height:auto;display:block}
figcaption{color:var(--muted);font-size:12.5px;margin-top:4px}
ul{padding-left:20px}
li{margin:4px 0}
ul.warn{list-style:none;padding:0}
ul.warn li{background:var(--warnbg);border-left:3px solid var(--warn);padding:7px 12px;
border-radius:0 4px 4px 0;margin:6px 0;font-size:14px}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em;
background:var(--soft);padding:1px 4px;border-radius:3px}
footer{margin-top:40px;color:var(--muted);font-size:12px}
"""


def render_html(a: Analysis, sections: list[Section]) -> str:
    name = a.exp.meta.get("name") or a.exp.path.name
    out = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{html.escape(str(name))} — svclab report</title>",
           f"<style>{CSS}</style></head><body><main>",
           f"<header><h1>{html.escape(str(name))}</h1>",
           f"<p>svclab report · {html.escape(a.mlabel)} ({html.escape(a.metric)}) of operation "
           f"{html.escape(repr(a.operation))} · {len(a.table)} ok runs</p></header>",
           "<nav>" + "".join(f'<a href="#{s.key}">{html.escape(s.title)}</a>' for s in sections)
           + "</nav>"]
    for s in sections:
        out.append(f'<section id="{s.key}"><h2>{html.escape(s.title)}</h2>')
        for b in s.blocks:
            out.append(_html_block(b, a.figures))
        out.append("</section>")
    out.append(f"<footer>svclab-analysis {__version__}</footer></main></body></html>")
    return "\n".join(out)


def _html_block(b: Block, figs: dict[str, bytes]) -> str:
    if isinstance(b, Heading):
        return f"<h3>{_inline(b.text)}</h3>"
    if isinstance(b, Para):
        cls = f' class="{b.cls}"' if b.cls else ""
        return f"<p{cls}>{_inline(b.text)}</p>"
    if isinstance(b, Bullets):
        cls = f' class="{b.cls}"' if b.cls else ""
        return f"<ul{cls}>" + "".join(f"<li>{_inline(i)}</li>" for i in b.items) + "</ul>"
    if isinstance(b, Figure):
        data = base64.b64encode(figs[b.key]).decode("ascii")
        return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(b.key)}">'
                f"<figcaption>{_inline(b.caption)}</figcaption></figure>")
    numeric = [all(_NUMERIC.match(r[i].strip()) for r in b.rows) and b.rows
               for i in range(len(b.headers))]
    head = "".join(f'<th class="n">{_inline(h)}</th>' if numeric[i] else f"<th>{_inline(h)}</th>"
                   for i, h in enumerate(b.headers))
    body = []
    for j, r in enumerate(b.rows):
        cls = ' class="best"' if b.highlight_first and j == 0 else ""
        body.append(f"<tr{cls}>" + "".join(
            f'<td class="n">{_inline(c)}</td>' if numeric[i] else f"<td>{_inline(c)}</td>"
            for i, c in enumerate(r)) + "</tr>")
    cap = f'<p class="caption">{_inline(b.caption)}</p>' if b.caption else ""
    return (f'<div class="tablewrap"><table><thead><tr>{head}</tr></thead><tbody>'
            + "".join(body) + f"</tbody></table></div>{cap}")


def render_md(a: Analysis, sections: list[Section], figdir: str) -> str:
    name = a.exp.meta.get("name") or a.exp.path.name
    out = [f"# {name}", "",
           f"svclab report · {a.mlabel} ({a.metric}) of operation {a.operation!r} · "
           f"{len(a.table)} ok runs", ""]
    for s in sections:
        out += [f"## {s.title}", ""]
        for b in s.blocks:
            if isinstance(b, Heading):
                out += [f"### {b.text}", ""]
            elif isinstance(b, Para):
                out += [b.text, ""]
            elif isinstance(b, Bullets):
                out += [f"- {i}" for i in b.items] + [""]
            elif isinstance(b, Figure):
                out += [f"![{b.key}]({figdir}/{b.key}.png)", "", f"*{b.caption}*", ""]
            else:
                def esc(c: str) -> str:
                    return c.replace("|", "\\|")
                out.append("| " + " | ".join(esc(h) for h in b.headers) + " |")
                out.append("|" + "|".join("---" for _ in b.headers) + "|")
                out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in b.rows]
                out.append("")
                if b.caption:
                    out += [f"*{b.caption}*", ""]
    return "\n".join(out)


def build_report(
    results: str | Path,
    out: str | Path | None = None,
    metric: str | None = None,
    operation: str | None = None,
    log: bool = False,
    confidence: float = 0.95,
) -> Path:
    """Analyse a results directory and write report.html, report.md and
    figures/*.png into `out` (default: the results directory). Returns the
    path of report.html."""
    exp = load_experiment(results, metric=metric, operation=operation)
    a = analyse(exp, log=log, confidence=confidence)
    a.figures = figures(a)
    sections = document(a)
    outdir = Path(out) if out is not None else exp.path
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        figdir = outdir / "figures"
        figdir.mkdir(exist_ok=True)
        for key, png in a.figures.items():
            (figdir / f"{key}.png").write_bytes(png)
        (outdir / "report.md").write_text(render_md(a, sections, "figures"), encoding="utf-8")
        path = outdir / "report.html"
        path.write_text(render_html(a, sections), encoding="utf-8")
    except OSError as exc:
        raise AnalysisError(f"{outdir}: cannot write the report ({exc.strerror})") from None
    return path.resolve()
