"""The report's text: the document model filled from an analysis."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from .. import __version__
from ..design import Factorial
from ..english import count
from ..formatting import ci, integer, num, percent, pval, seconds, with_unit
from ..metrics import label_of, lower_is_better, unit_of
from ..questions import Answer, Margin, level_label
from ..results import NOT_SUT_ROLES
from ..sequential import METHOD
from . import tradeoff
from .analysis import (
    CONFIG,
    CV_WARN_PCT,
    MIN_RUNS,
    ROLE_LABELS,
    TARGET_ERROR_PCT,
    TIED,
    UNDETERMINED,
    Analysis,
    term_significant,
)
from .model import Bullets, Document, Figure, Heading, Para, Section, Table


def _version(meta: dict[str, Any]) -> str:
    """svclab's version, and its commit where that says more (a build from
    a tag: a build of a bare commit is named by the commit alone)."""
    version = meta.get("svclab_version") or "—"
    commit = meta.get("svclab_commit") or ""
    return version if commit in ("", version) else f"{version} ({commit})"


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


def _where(by: tuple[tuple[str, str], ...]) -> str:
    return " · ".join(f"{f.rsplit('.', 1)[-1]}={level_label(v)}" for f, v in by)


def claim_text(m: Margin) -> str:
    """The margin's claim as the report states it."""
    if m.kind == "equivalence":
        return f"the equivalence margin {num(m.low)}–{num(m.high)}×"
    bound = f"≤ {num(m.high)}×" if m.high is not None else f"≥ {num(m.low)}×"
    return f"the {m.kind} margin {bound}"


def verdict_text(verdict: str, margin: Margin | None) -> str:
    if margin is None:
        return {"differs": "the levels differ",
                "undecided": "not distinguishable from 1×"}[verdict]
    c = claim_text(margin)
    return {"holds": f"meets {c}", "fails": f"misses {c}",
            "undecided": f"not yet decided against {c}"}[verdict]


def question_sentence(ans: Answer) -> str:
    """One sentence: the ratio per `by` level with its interval and verdict,
    the interaction, and whether the question is decided after how many runs."""
    q = ans.question
    levels = list(dict.fromkeys(r.level for r in ans.ratios))
    parts = []
    for r in ans.ratios:
        iv = (f"{percent(r.confidence)}% CI {ci(r.low, r.high, '×')}" if math.isfinite(r.low)
              and math.isfinite(r.high) else "no interval")
        lvl = f" for {level_label(r.level)}" if len(levels) > 1 else ""
        where = f" with {_where(r.by)}" if r.by else ""
        parts.append(f"**{num(r.ratio)}×**{lvl}{where} ({iv}; "
                     f"{verdict_text(r.verdict, q.margin)})")
    text = f"**{q.name}**: {label_of(q.metric)}"
    if ans.ratios:
        head = level_label(levels[0]) if len(levels) == 1 else "each level"
        text += (f" with {q.effect} = {head} over {level_label(ans.ratios[0].base)} is "
                 + ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1])
    else:
        text += " could not be compared"
    for i in ans.interactions:
        iv = (f"{percent(i.confidence)}% CI {ci(i.low, i.high, '×')}"
              if i.differs is not None else "no interval")
        said = {True: "a difference", False: "no difference shown", None: "undecided"}[i.differs]
        text += (f"; the ratio is {num(i.ratio)}× as large with {_where(i.by)} as with "
                 f"{_where(i.base_by)} ({iv}: {said})")
    blocks = f" in {count(ans.blocks, 'block')}" if ans.method == "sequential" else ""
    text += (f" — **{'decided' if ans.decided else 'not decided'}** after "
             f"{count(ans.runs, 'run')}{blocks}")
    if ans.flagged:
        text += (f", leaving out {count(ans.flagged, 'run')} the load "
                 "generator flagged")
    text += "."
    if ans.notes:
        text += " (" + "; ".join(ans.notes) + ".)"
    return text


def questions_section(answers: list[Answer], sequential_design: bool) -> Section:
    """The report's first section: each question of the spec answered."""
    s = Section("questions", "Answers to the questions")
    # One paragraph per question, styled as the answer is.
    s.blocks += [Para(question_sentence(x), "answer") for x in answers]
    if sequential_design:
        how = (f"Intervals are an {METHOD}: they stay valid however the experiment chose "
               "to stop, and each block of runs (every configuration once) gives one "
               "estimate of each ratio.")
    else:
        how = ("Intervals are Student's t on the log scale from the cell-means model of "
               "every configuration, with the pooled run-to-run error.")
    s.blocks.append(Para(
        "Each ratio compares a level with the first level of the question's factor, "
        "averaging over the factors the question does not name with equal weight. " + how +
        " The ratios of one question share its error rate (Bonferroni), which is why their "
        "intervals can be wider than 95%. A question is decided when every ratio is: its "
        "interval lies wholly inside or wholly outside the margin (or, without a margin, "
        "excludes 1×)."))
    return s


def runs_cell(n: int, flagged: int) -> str:
    """A configuration's runs, with how many the load generator flagged."""
    return f"{n} ({flagged} flagged)" if flagged else str(n)


def flagged_note(a: Analysis) -> str:
    """What the ranking and the plots do with flagged runs, when the
    ranked configurations hold any; empty otherwise."""
    n = int(a.ranked["flagged"].sum())
    if not n:
        return ""
    one = n == 1
    left_out = (f" The answers to the questions leave {'it' if one else 'them'} out."
                if a.answers else "")
    return (f" {count(n, 'run')} the load generator flagged "
            f"{'is' if one else 'are'} counted here and marked in the runs column and the "
            f"plots: {'its latency holds' if one else 'their latencies hold'} the "
            "generator's own lag." + left_out)


def interval_rule(kind: str) -> str:
    """The caption's words for the centre's interval (stats.run_interval)."""
    if kind == "geometric mean":
        return ("the geometric mean's CI is Student's t over runs on the log scale, so it "
                "never reaches below zero.")
    return "the mean's CI is a BCa bootstrap over runs (a run's value is zero)."


def ratio_rule(kind: str) -> str:
    """The caption's words for the ratio to the best (stats.center_ratio)."""
    how = ("Welch's t on the log scale" if kind == "geometric mean" else "a bootstrap")
    return (f"The ratio to the best is of the {kind}s the ranking uses; its CI is {how} "
            "over the two configurations' runs, and where it includes 1 the runs cannot "
            "tell that configuration from the best.")


def ratio_interval(r: Any, conf: int) -> str:
    """`95% CI 0.610–1.85×` for a row of Analysis.ranked; "no interval"."""
    iv = ci(r["ratio_ci_low"], r["ratio_ci_high"], "×")
    return "no interval" if iv == "—" else f"{conf}% CI {iv}"


def _names(labels: list[str]) -> str:
    """`**a**`, `**a** and **b**`, `**a**, **b** and **c**`."""
    b = [f"**{x}**" for x in labels]
    return b[0] if len(b) == 1 else ", ".join(b[:-1]) + " and " + b[-1]


def winner_text(a: Analysis, better: str, spread: str) -> str:
    """The answer's first sentences: the best configuration, or the group the
    runs cannot tell from it (its ratio's interval includes 1), or that the
    ranking is not determinable where no interval exists (Analysis.ranked's
    vs_best)."""
    conf = round(100 * a.confidence)
    r = a.ranked
    best = r.iloc[0]
    value = f"**{with_unit(best['center'], a.unit)}** ({spread})"
    tied = r[r["vs_best"] == TIED]
    unknown = r[r["vs_best"] == UNDETERMINED]
    # Too few runs is the usual reason for no interval (a zero mean is the other).
    few = (", which needs two or more runs of each"
           if min([int(best["n"]), *unknown["n"].astype(int)]) < 2 else "")
    if len(unknown) == len(r) - 1:
        why = ("with one run per configuration there is no interval to tell it from the "
               "others" if not a.replicated else
               f"no other configuration's ratio to it has an interval{few}")
        return (f"**{best[CONFIG]}** has the {better} {a.mlabel}: {value}, but the ranking "
                f"is not determinable: {why}.")
    if tied.empty:
        text = f"**{best[CONFIG]}** has the {better} {a.mlabel}: {value}."
    else:
        each = [f"{num(t['ratio_to_best'])}×, {ratio_interval(t, conf)}"
                for _, t in tied.iterrows()]
        ratios = (f"ratio {each[0]}" if len(each) == 1 else
                  "ratios to the first, in that order: " + "; ".join(each))
        text = (f"{_names([best[CONFIG], *tied[CONFIG]])} have the {better} {a.mlabel}; "
                f"the runs cannot tell them apart ({ratios}). **{best[CONFIG]}** ranks "
                f"first: {value}.")
    if not unknown.empty:
        one = len(unknown) == 1
        text += (f" Against {_names(list(unknown[CONFIG]))} the ranking is not determinable: "
                 f"{'its' if one else 'their'} ratio to the best has no interval{few}.")
    return text


def build(a: Analysis) -> Document:
    """The report's sections, in reading order, from an analysis and its figures."""
    u = a.unit
    conf = round(100 * a.confidence)
    exp = a.exp
    meta = exp.meta
    best = a.ranked.iloc[0]
    center_kind = str(best["center_kind"])  # "geometric mean" or "mean", one per metric
    sections: list[Section] = []

    # ---- the questions the spec asked, before any ranking
    if a.answers:
        sections.append(questions_section(a.answers, a.sequential))

    # ---- the answer
    s = Section("answer", "The answer")
    better = "lowest" if lower_is_better(a.metric) else "highest"
    n_cfg = len(a.ranked)
    best_ci = ci(best["center_ci_low"], best["center_ci_high"], u)
    n_best = int(best["n"])
    spread = (f"{n_best} run{'' if n_best == 1 else 's'}, no interval" if best_ci == "—"
              else f"{center_kind} of {n_best} runs, {conf}% CI {best_ci}")
    if n_cfg > 1:
        text = winner_text(a, better, spread)
    else:
        # One configuration: a value, not a ranking of one.
        text = (f"One configuration, so nothing to rank: the {a.mlabel} of "
                f"**{best[CONFIG]}** is **{with_unit(best['center'], u)}** ({spread}).")
    text += tradeoff.winner_errors(a.ranked, a.metric)
    if a.factors and all(f.startswith("load.") for f in a.factors):
        text += (f" Every factor ({', '.join(a.factors)}) sets the load, not the system: "
                 "its levels are conditions the system meets, not choices to rank, so "
                 "read the order as how it responds to them.")
    worst = a.ranked.iloc[-1]
    if n_cfg > 1 and worst["vs_best"] != TIED:  # a tied one's ratio is in the tie's words
        text += (f" The {'highest' if better == 'lowest' else 'lowest'}, {worst[CONFIG]}, "
                 f"has {with_unit(worst['center'], u)}: its {center_kind} is "
                 f"{num(worst['ratio_to_best'])}× the best's ({ratio_interval(worst, conf)}).")
    terms = None
    if a.main is not None:
        terms = a.main.terms
    elif a.anova_table is not None:
        terms = a.anova_table
    if terms is not None:
        tt = terms[~terms["term"].isin(["Intercept", "Residual"])].sort_values(
            "percent", ascending=False)
        if not tt.empty and not a.replicated and len(a.factors) == 1:
            # One factor, one run per level: every difference is the
            # factor's by construction, so "explains 100%" would say nothing.
            text += (f" With one factor and one run per level, all the variation is "
                     f"{a.factors[0]}'s by construction: its share of the variation is not "
                     "meaningful without an error term.")
        elif not tt.empty:
            top = tt.iloc[0]
            err = terms.loc[terms["term"] == "Residual", "percent"]
            err_pct = float(err.iloc[0]) if len(err) else math.nan
            text += (f" **{top['term']}** explains {num(top['percent'])}% of the variation "
                     f"in {'log ' if a.log else ''}{a.mlabel}")
            text += (f"; differences between repeated runs explain {num(err_pct)}%."
                     if err_pct == err_pct and a.replicated else ".")
            # A share of variation is not evidence: say when the top term could
            # be noise, so the headline cannot overclaim.
            sig = term_significant(a, str(top["term"]))
            if sig is False:
                text += (f" That effect is not distinguishable from run-to-run noise at "
                         f"{conf}% confidence; more repetitions would settle it.")
            elif a.replicated and err_pct == err_pct and err_pct > float(top["percent"]):
                text += " Run-to-run noise outweighs every factor."
    if not a.replicated and a.factors:
        text += (" **No error term:** each configuration ran once, so no share, ratio or "
                 "difference here can be told from run-to-run noise, and no test or interval "
                 "is computed; set `experiment.repetitions` ≥ 2 (or "
                 "`experiment.until = \"decided\"` with questions) to measure it.")
    iso = exp.meta.get("isolation") or {}
    text += generator_caution(exp.runs, isolated=iso.get("mode") == "cpuset")
    s.blocks.append(Para(text, "answer"))
    rows = []
    for i, r in enumerate(a.ranked.itertuples(), start=1):
        rows.append([str(i), *a.cfg_cells(getattr(r, CONFIG)), num(r.center),
                     ci(r.center_ci_low, r.center_ci_high),
                     num(r.median), "1 (best)" if i == 1 else
                     f"{num(r.ratio_to_best)} ({ci(r.ratio_ci_low, r.ratio_ci_high)})",
                     num(r.error_rate_pct), runs_cell(int(r.n), int(r.flagged))])
    s.blocks.append(Table(
        ["rank", *a.cfg_headers(),
         f"{center_kind} ({u})" if a.metric.startswith("mean")
         else f"{center_kind} {a.metric.removesuffix('_ms')} ({u})",
         f"{conf}% CI ({u})", f"median ({u})", f"{center_kind} ÷ best (×, {conf}% CI)",
         "errors (%)", "runs"],
        rows, caption=f"Operation {a.operation!r}. One value per run; "
        f"{interval_rule(center_kind)} {ratio_rule(center_kind)}" + flagged_note(a),
        highlight_first=True))
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
        residual_name = ("error (between runs)" if a.replicated else
                         "residual (the highest interaction)")
        s.blocks.append(Heading("ANOVA (type II sums of squares)"))
        s.blocks.append(Table(
            ["term", "df", "sum of squares", "F", "p", "variation explained (%)"],
            [[residual_name if t.term == "Residual" else t.term, str(t.df),
              num(t.sum_sq), num(t.F), pval(t.p), num(t.percent)]
             for t in a.anova_table.itertuples()],
            caption="Factors with more than two levels: ANOVA on run-level values."
            + ("" if a.replicated else " No configuration ran twice, so there is no error "
               "term: no F test and no p-value. The sums of squares and shares describe "
               "the variation only; "
               + ("the last row is the highest-order interaction, which run-to-run noise "
                  "is confounded with." if len(a.factors) > 1 else
                  "with one factor, all of it is the factor's by construction, run-to-run "
                  "noise included."))))
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
        f"{meta.get('created') or '—'}, svclab {_version(meta)}, "
        f"spec {meta.get('spec_path') or '—'}.",
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
    if ht := _host_timer_line(meta.get("host_timer")):
        items.append(ht)
    if meta.get("isolation"):
        items.append(isolation_line(meta["isolation"]))
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
                         f"Intervals are {conf}%. A metric positive in every run shows its "
                         "geometric mean with Student's t on the log scale, which never "
                         "reaches below zero; one that is zero in some run (an error rate) "
                         "its mean with a BCa bootstrap over runs. The median's interval is "
                         "from order statistics (which need 6 or more runs; — otherwise)."))
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
        mk = str(dm["center_kind"].dropna().iloc[0]) if dm["center_kind"].notna().any() \
            else "mean"
        s.blocks.append(Table(
            [*a.cfg_headers(), "runs", f"{mk}{hu}", f"{conf}% CI{hu}", f"median{hu}",
             *([f"{conf}% CI{hu}"] if has_mci else []), f"sd{hu}", "CV (%)"],
            [[*a.cfg_cells(getattr(r, CONFIG)), integer(r.n), num(r.center),
              ci(r.center_ci_low, r.center_ci_high), num(r.median),
              *([ci(r.median_ci_low, r.median_ci_high)] if has_mci else []), num(r.sd),
              num(r.cv_pct)]
             for r in dm.itertuples()],
            caption="" if hu else f"All values in {mu} except the CV."))
    if not a.marginal.empty:
        mm = a.marginal
        s.blocks.append(Heading(f"{a.mlabel} per factor level ({u})"))
        s.blocks.append(Table(
            ["factor", "level", "configurations", "runs", f"{mm['kind'].iloc[0]} ({u})",
             f"{conf}% CI ({u})"],
            [[r.factor, level_label(str(r.level)), str(r.configurations), str(r.runs),
              num(r.center), ci(r.ci_low, r.ci_high)] for r in mm.itertuples()],
            caption="Each level's marginal mean: the mean over the design's configurations "
            "at that level, each weighted equally whatever its number of runs, not the runs "
            "pooled as if different configurations were repeats. The interval uses the "
            "pooled run-to-run error of every configuration; without replication there is "
            "none."))
    if not a.role_cpu.empty:
        roles = list(dict.fromkeys(a.role_cpu["role"]))
        by = a.role_cpu.set_index([CONFIG, "role"])
        s.blocks.append(Heading("CPU per request, by role (ms)"))
        s.blocks.append(Table(
            [*a.cfg_headers(), *[ROLE_LABELS.get(r, r) for r in roles], "runs"],
            [[*a.cfg_cells(c), *[num(by["cpu_ms"].get((c, r), math.nan)) for r in roles],
              integer(by["runs"].xs(c, level=CONFIG).max())]
             for c in a.ranked[CONFIG] if c in by.index.get_level_values(CONFIG)],
            caption=role_cpu_caption(roles)))
    if not a.role_cpu.empty and a.role_cpu["pss_mb"].notna().any():
        roles = list(dict.fromkeys(a.role_cpu["role"]))
        by = a.role_cpu.set_index([CONFIG, "role"])
        s.blocks.append(Heading("Memory, by role (MiB)"))
        s.blocks.append(Table(
            [*a.cfg_headers(), *[ROLE_LABELS.get(r, r) for r in roles], "processes"],
            [[*a.cfg_cells(c), *[num(by["pss_mb"].get((c, r), math.nan)) for r in roles],
              integer(by["processes"].xs(c, level=CONFIG).sum())]
             for c in a.ranked[CONFIG] if c in by.index.get_level_values(CONFIG)],
            caption="Median over runs of each role's memory in the measurement window: "
            "the processes' proportional set sizes (PSS), summed. Each page that "
            "processes share, such as the binary every host of a split deployment "
            "maps, counts once in all rather than once in each as RSS would; a "
            "split deployment's RSS summed would overstate its memory by the binary "
            "times the processes. Pages shared with processes outside the role (the "
            "generator, the svclab parent) count in part."))
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
        "box": f"{a.mlabel} of every run ({u}); boxes show quartiles over runs."
               + (" A run the load generator flagged is drawn as ×." if a.flagged else ""),
        "cdf": f"Latency CDF per configuration, requests of all its runs pooled, "
               f"{a.cdf_source}. It describes the distribution only; no test uses "
               "per-request data.",
        "timeseries": "Per-second latency and throughput of every run, one line per run."
                      + (" A run the load generator flagged is dashed." if a.flagged else ""),
        "scaling": "Per-second latency and throughput of every run above the replicas of "
                   "each autoscaled group after each autoscaler decision (scaling.parquet), "
                   "on one time axis.",
        "faults": "Per-second success rate and latency of every run, with the windows of "
                  "[deploy.faults] shaded as they were injected (run.json) and a kill as a "
                  "dashed line; a request counts in the second it ended.",
        "interactions": f"Mean {a.mlabel} ({u}); lines that are not parallel show an "
                        "interaction.",
        "qq": "Run-level residuals against a normal distribution; points near the line "
              "support the t-based intervals.",
        "hops": "Each hop's time per traced request (hops.parquet, deploy.tracing): its "
                "total over the configuration's traced requests divided by their number, "
                "so a hop called in 30% of the requests counts 0.3 of its time per call "
                "and one called twice counts twice, and the hops of calls made one after "
                "another add up to the request (the diamond: the mean traced request, at "
                "the entry). Each hop's segment is the component's own work, and the wire "
                "on the way to it (the caller's client span less the server span: "
                "encoding, network, TLS). Envoy emits spans of its own, shown crossed as "
                "the proxies' time; nginx and HAProxy emit none, so behind them the "
                "proxies' time is part of the wire." + hop_caption(a.hops),
        "roles": "CPU per request of each role (median over runs, resources.parquet): "
                 "the hosts, the proxies beside them or shared by the node, and the "
                 "telemetry backends. CPU is read from /proc in 10 ms ticks, so a short "
                 "run's small roles are coarse, and a backend's work on spans exported "
                 "after the window (hosts batch them for up to 5 s) is not in it.",
    }
    for key in ["box", "cdf", "timeseries", "scaling", "faults", "hops", "roles",
                "interactions"]:
        if key in a.figures:
            s.blocks.append(Figure(key, captions[key]))
    for key in a.figures:
        if key.startswith("curve_"):
            s.blocks.append(Figure(key, f"{a.ranked['center_kind'].iloc[0].capitalize()} "
                                        f"{a.mlabel} ({u}) with its {conf}% CI against "
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
    if a.level_ratios:
        s.blocks.append(Para(
            "Each factor's levels are compared through their marginal means, those of the "
            "per-level table: with other factors varying, a level's runs are different "
            "configurations, not repeats, so they are not pooled into one sample. The "
            "contrast averages each level's configurations with equal weight; its interval "
            f"({conf}%) and p are Student's t on the pooled run-to-run error, p "
            "Holm-adjusted within each factor."))
    for f, lr in a.level_ratios.items():
        ratio = lr["kind"].iloc[0] == "ratio"
        kind = str(a.marginal["kind"].iloc[0]) if not a.marginal.empty else "mean"
        s.blocks.append(Heading(f"{f} (marginal means over the other factors)"))
        s.blocks.append(Table(
            ["A", "B", f"{kind} A ({u})", f"{kind} B ({u})",
             "ratio A/B (×)" if ratio else f"A − B ({u})",
             f"{conf}% CI ({'×' if ratio else u})", "p (Holm)"],
            [[level_label(str(r.a)), level_label(str(r.b)), num(r.center_a), num(r.center_b),
              num(r.estimate), ci(r.ci_low, r.ci_high), pval(r.p_holm)]
             for r in lr.itertuples()]))
    if a.pairwise or a.configs_compare is not None:
        # The groups compared are always repeats: a lone factor's levels,
        # else the configurations (the marginal means above compare levels).
        tested = (f"Mann-Whitney U on run-level {a.mlabel} between the levels of "
                  f"{next(iter(a.pairwise))}, the only factor, so a level's runs are repeats; "
                  "p Holm-adjusted over its pairs. " if a.pairwise else
                  f"Between configurations, whose runs are repeats: Kruskal-Wallis and Dunn's "
                  f"test on run-level {a.mlabel}, p Holm-adjusted over every pair; each pair's "
                  "rank-biserial r and ratio come from its runs, as in Mann-Whitney U. ")
        s.blocks.append(Para(
            tested +
            "Rank-biserial r runs from −1 to 1 and is positive when A's runs tend to be "
            f"higher. The ratio is median(A) ÷ median(B) with a {conf}% bootstrap CI. With "
            "few runs the smallest possible p is large (0.1 with 3 runs against 3): read the "
            "effect size."))
    for f, res in a.pairwise.items():
        pr = res["pairs"]
        s.blocks.append(Heading(f))
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
    if not s.blocks:
        s.blocks.append(Para(
            "No test: each configuration ran once, so there is no error term, and a test "
            "would take different configurations for repeats. Set `experiment.repetitions` "
            "≥ 2." if a.factors and not a.replicated else
            "Nothing to compare: the runs have one configuration."))
    sections.append(s)

    # ---- warnings
    s = Section("warnings", "Warnings")
    s.blocks.append(Bullets(a.warnings, "warn") if a.warnings else Para("None."))
    sections.append(s)

    # ---- methods
    s = Section("methods", "Methods")
    s.blocks.append(Bullets(methods_text(a)))
    sections.append(s)
    name = a.exp.meta.get("name") or a.exp.path.name
    subtitle = (f"svclab report · {a.mlabel} ({a.metric}) of operation {a.operation!r} · "
                f"{len(a.table)} ok runs")
    return Document(str(name), subtitle, sections, a.figures)


def _pairs_table(pr: pd.DataFrame, u: str) -> Table:
    return Table(
        ["A", "B", "runs A/B", f"median A ({u})", f"median B ({u})", "U", "p (Holm)",
         "rank-biserial r", "median ratio A/B (×)", "CI (×)"],
        [[r.a, r.b, f"{r.n_a}/{r.n_b}", num(r.median_a), num(r.median_b), num(r.U),
          pval(r.p_holm), num(r.rank_biserial), num(r.ratio), ci(r.ratio_ci_low, r.ratio_ci_high)]
         for r in pr.itertuples()])


def methods_text(a: Analysis) -> list[str]:
    conf = round(100 * a.confidence)
    questions = []
    if a.answers:
        questions.append(
            "**Questions.** Each question of the spec is a ratio of its factor's levels on "
            "the log scale over runs, averaged over the other factors with equal weight, "
            "judged against its margin (non-inferiority, superiority or equivalence) or, "
            "without one, against 1×; its ratios share the error rate by Bonferroni. "
            + (f"The experiment stopped when decided, so the intervals are an {METHOD}, "
               "valid whenever it stopped; the ranking's and the tables' intervals below "
               "are fixed-sample ones, not corrected for the stopping." if a.sequential else
               "Intervals are Student's t from the cell-means model with the pooled "
               "run-to-run error.")
            + " Runs the load generator flagged are left out of the answers.")
    return [
        *questions,
        "**The run is the unit of replication.** Each run is reduced to one value per metric "
        "(p50, p95, p99 and mean latency from the run's HDR histogram, throughput as served "
        "requests per second, error rate, CPU seconds of the system under test per 1000 "
        "requests). Requests within a run share the same process, caches and neighbours, so "
        "they are not independent; tests on them would find every difference significant. "
        "Per-request samples appear only in the CDF.",
        f"**Intervals.** {conf}%, chosen by one rule: a metric positive in every run "
        "(latency, throughput, CPU) gets its geometric mean with Student's t on the log "
        "scale over runs, so no interval reaches below zero; one that is zero in some run "
        "(an error rate) its mean with a BCa bootstrap over runs; one run gets no interval. "
        "Per factor level, the marginal mean weights the design's configurations equally. "
        "The ranking and each configuration's ratio to the best use the same centre: a "
        "ratio of geometric means gets Welch's t on the log scale over the two "
        "configurations' runs (a ratio of means, a bootstrap). Each such interval is for its "
        "pair alone: one configuration is named best only when every other's interval "
        "excludes 1; those whose interval includes 1 are named with it, as runs that cannot "
        "be told apart. "
        "The median's interval is distribution-free, from order statistics; ratios of "
        "medians use a bootstrap (BCa, percentile when BCa degenerates) over runs. Without "
        "replication there is no error term: no interval, no test, and no share of "
        "variation for the error.",
        "**Factorial designs** (Jain, ch. 18). Each two-level factor is coded −1/+1; the effect "
        "q is half the difference between the high and the low level's means. Each term's sum "
        "of squares is 2^k·r·q², and its share of the total is the 'variation explained'. "
        "Effect intervals use s_e/√(2^k·r) with a t quantile on 2^k(r−1) degrees of freedom. "
        "On the log scale effects become ratios: exp(2q) is the high/low ratio.",
        "**More than two levels.** ANOVA with type II sums of squares (statsmodels), and "
        "two-level subsets (the first level against each other) analysed as 2^k r designs. "
        "Without replication the highest-order interaction takes the error's place, so "
        "no F test or p-value is computed. Kruskal-Wallis with Dunn's post-hoc test and "
        "Holm's correction does not assume normality.",
        "**Pairs.** Mann-Whitney U on run values, Holm-adjusted; rank-biserial correlation as "
        "the effect size. Only groups whose runs are repeats are compared: the "
        "configurations, or a factor's levels when it is the only factor. With other "
        "factors varying, a level's runs are different configurations, so its levels are "
        "compared through the design's marginal means instead (the per-level table's): "
        "their ratio (difference for a metric that can be zero) with Student's t on the "
        "pooled run-to-run error, Holm-adjusted; without replication, not at all.",
        "**Checks.** Shapiro-Wilk and the QQ plot use run-level residuals, never per-request "
        f"data. Warnings flag between-run CV above {CV_WARN_PCT:g}%, fewer than {MIN_RUNS} runs "
        "per configuration, failed runs, errors, and runs where the load generator was the "
        "bottleneck.",
        f"**Sample size.** Jain's n = (100·t·s / (r·x̄))² with r = {TARGET_ERROR_PCT:g}%: the "
        "runs per configuration needed for a ±r% interval on the mean.",
        f"Computed by svclab-analysis {__version__} with scipy, statsmodels and "
        "scikit-posthocs.",
    ]


def generator_caution(runs: pd.DataFrame, isolated: bool = False) -> str:
    """A sentence for the answer when the load generator fell behind in
    some runs: their latencies hold its own lag, and a reader who stops at
    the answer must know before trusting the ranking. The advice does not
    suggest isolation to an experiment that had it (experiment.json's
    isolation mode "cpuset")."""
    if runs.empty or "bottleneck" not in runs:
        return ""
    ok = runs[runs["status"] == "ok"]
    n = int(ok["bottleneck"].fillna(False).astype(bool).sum())
    if n == 0:
        return ""
    return (f" **Caution:** the load generator fell behind in {n} of {len(ok)} runs "
            "(generator_bottleneck), so their latencies include its own lag; the "
            "warnings below give each run's reason. "
            + ("The generator had CPUs of its own already: lower the rate, split it over "
               "load.generators, or run on a quieter machine before relying on this ranking."
               if isolated else
               "Give the generator its own CPUs (experiment.isolation) or a lower rate "
               "before relying on this ranking."))


def _host_timer_line(ht: dict[str, Any] | None) -> str | None:
    """The host's timer lateness measured before the experiment
    (experiment.json's host_timer), or None when not measured. It describes
    the host; each open-loop run is judged against the floor of its own
    window (run.json's generator.floor)."""
    if not ht:
        return None
    return (f"Host timer ({ht.get('method') or '—'}, {ht.get('samples', '—')} wake-ups): "
            f"a bare sleep-to-deadline loop woke late by p50 {num(ht.get('p50_ms'))} ms, "
            f"p99 {num(ht.get('p99_ms'))} ms, p99.9 {num(ht.get('p999_ms'))} ms, "
            f"max {num(ht.get('max_ms'))} ms before the first run. Each open-loop run's "
            "send lag is judged against the same loop run beside it over its own window "
            "(run.json's generator.floor), and against this only when none ran.")


def isolation_line(iso: dict) -> str:
    """How many cores the load generator and the system under test had
    (experiment.json's "isolation")."""
    def cores(n: object, cpus: object) -> str:
        return f"{count(n, 'core')} (CPU {cpus or '—'})"
    gen = cores(iso.get("loadgen_cores"), iso.get("loadgen_cpus"))
    sut = cores(iso.get("sut_cores"), iso.get("sut_cpus"))
    if iso.get("mode") == "cpuset":
        cg = f", cgroup {iso['cgroup']}" if iso.get("cgroup") else ""
        return (f"CPU isolation: cpuset{cg}; the load generator had {gen}, "
                f"the system under test {sut}, disjoint.")
    why = f" ({iso['reason']})" if iso.get("reason") else ""
    if not iso.get("sut_cores"):
        # A cluster's pods: this machine's cores are not what they shared.
        return f"CPU isolation: none{why}."
    return f"CPU isolation: none{why}; the load generator and the system under test shared {sut}."


def role_cpu_caption(roles: list[str]) -> str:
    """The caption of the CPU per request table, naming its columns of the
    system under test (hosts, proxies, or an external deployer's
    processes) and, when it has one, the telemetry column."""
    sut = [ROLE_LABELS.get(r, r) for r in roles if r not in NOT_SUT_ROLES]
    names = " and ".join([", ".join(sut[:-1]), sut[-1]] if len(sut) > 1 else sut)
    cols = (f"The columns {names} are the system under test; " if len(sut) > 1 else
            f"The column {names} is the system under test; " if sut else "")
    telemetry = (f"{ROLE_LABELS['telemetry']} are the run's Jaeger and Prometheus, reported "
                 "apart and left out of cpu_s_per_1k; " if "telemetry" in roles else "")
    return ("Median over runs of each role's CPU time in the measurement window divided by "
            f"the requests the run completed (resources.parquet). {cols}{telemetry}"
            "the load generator is left out. The system under test's CPU "
            "in a run is its cpu_s_per_1k (ms per request is CPU·s per 1000 requests); these "
            "medians, taken role by role, add up to that table's median only roughly. /proc "
            "counts CPU in 10 ms ticks, so short runs give coarse values"
            + (", and a backend's work on spans exported after the window is not counted."
               if "telemetry" in roles else "."))


def hop_caption(hops: pd.DataFrame) -> str:
    """The hop figure's caption's last sentences: the hops it marks as
    called in parallel, and the hops it folds into one (figures.top_hops)."""
    if hops.empty:
        return ""
    out = ""
    shown = hops.drop_duplicates("hop")
    parallel = list(dict.fromkeys(hops.loc[hops["parallel"] > 0, "hop"]))
    if parallel:
        out += (f" {len(parallel)} hop(s) marked (parallel) ran at the same time as another "
                "call of the same request at their depth (a synth service's "
                "mode = \"parallel\", or calls below such calls): their times overlap, so "
                "a bar can be longer than the request (the component that made the calls "
                "has as its own work what none of its calls covered).")
    other = shown[shown["other"]] if "other" in shown else shown.iloc[:0]
    if not other.empty:
        out += (f" The {len(shown) - len(other)} hops with the largest share of some "
                "configuration's bar have a colour each; the rest are summed into the grey "
                f"segment, {other['hop'].iloc[0]}.")
    return out
