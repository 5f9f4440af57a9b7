"""The questions a spec declares ([[experiment.questions]]), answered.

A question compares the levels of one factor (`effect`) on one `metric` as a
ratio, each level over the first, optionally per level of other factors
(`by`), with the interaction (the ratio of ratios between the `by` levels),
and judges the ratio against an optional `margin`. Pure computation: runs in
(one row per ok run), frozen dataclasses out; `report` words them.

Scale and weights. Ratios are computed on the log scale over runs, so their
intervals never reach zero. Factors that are neither the effect nor `by`
are averaged over with equal weight per combination of their levels (the
ratio is the design's, not a pooling of different configurations).

Intervals. A fixed design (no `experiment.until`) uses the cell-means model
of every configuration on ln(metric), Student's t with the pooled
within-configuration error; with one run per configuration there is no error
term and no interval. A sequential design (`experiment.until = "decided"`)
estimates each contrast once per block (`repetition`) that holds a run of
every configuration the contrast compares, and uses the anytime-valid
confidence sequence of `sequential`, which stays valid however the experiment
decided to stop. A block missing one of them (a run lost or flagged) gives
that contrast no value and the others theirs: a contrast's sequence counts
its own blocks, and the answer's runs are those its contrasts used.

Verdict. The contrasts a question decides on (each effect level against the
first, in each `by` cell) share its 1 − confidence by Bonferroni; so do its
interactions. Runs the load generator flagged as its own bottleneck are left
out (their latency holds the generator's lag), and counted.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import sequential
from .english import count
from .errors import AnalysisError
from .metrics import METRICS, canonical, lower_is_better
from .results import Experiment, level_str, response_table
from .stats import Cell, cell_contrast, cell_means


@dataclass(frozen=True)
class Margin:
    """The claim a ratio is judged against: low ≤ ratio ≤ high (None: unbounded).

    kind is "non-inferiority" (the effect costs at most a factor: margin ≥ 1),
    "superiority" (it gains at least one: margin < 1) or "equivalence" (a
    [low, high] pair)."""

    low: float | None
    high: float | None
    kind: str
    given: float | tuple[float, float]


@dataclass(frozen=True)
class Question:
    name: str
    effect: str
    by: tuple[str, ...]
    metric: str
    margin: Margin | None = None


def parse_margin(value: Any, metric: str, where: str) -> Margin | None:
    """`margin` of a question: a number m (for a metric where lower is better
    the claim is ratio ≤ m; where higher is better, ratio ≥ 1/m) or a pair
    [low, high] (the claim low ≤ ratio ≤ high)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise AnalysisError(f"{where}: expected a ratio such as 1.10 or a pair [0.9, 1.1]")
    if isinstance(value, int | float):
        m = float(value)
        if not math.isfinite(m) or m <= 0 or m == 1:
            raise AnalysisError(f"{where}: a margin is a ratio above 0 and not 1, got {value}")
        kind = "non-inferiority" if m > 1 else "superiority"
        if lower_is_better(metric):
            return Margin(None, m, kind, m)
        return Margin(1.0 / m, None, kind, m)
    if isinstance(value, list | tuple) and len(value) == 2 and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        lo, hi = float(value[0]), float(value[1])
        if not (0 < lo < 1 < hi) or not math.isfinite(hi):
            raise AnalysisError(f"{where}: an equivalence margin [low, high] needs "
                                f"0 < low < 1 < high, got {list(value)}")
        return Margin(lo, hi, "equivalence", (lo, hi))
    raise AnalysisError(f"{where}: expected a ratio such as 1.10 or a pair [0.9, 1.1], "
                        f"got {value!r}")


def spec_of(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The experiment's spec: experiment.json's resolved `spec` when it has
    one, else its `spec_text` parsed as TOML; {} when neither."""
    spec = meta.get("spec")
    if isinstance(spec, dict):
        return spec
    text = meta.get("spec_text")
    if isinstance(text, str) and text.strip():
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise AnalysisError(f"experiment.json: spec_text is not valid TOML ({exc})") from None
    return {}


def is_sequential(meta: Mapping[str, Any]) -> bool:
    """Whether the experiment stops when its questions are decided."""
    exp = spec_of(meta).get("experiment") or {}
    return isinstance(exp, dict) and exp.get("until") == "decided"


def parse_questions(meta: Mapping[str, Any], factors: Sequence[str]) -> list[Question]:
    """[[experiment.questions]] of the experiment's spec, checked against its
    factors; AnalysisError naming the question and key when one is wrong."""
    exp = spec_of(meta).get("experiment") or {}
    raw = exp.get("questions") if isinstance(exp, dict) else None
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise AnalysisError("experiment.questions: expected an array of tables")
    out: list[Question] = []
    for i, q in enumerate(raw):
        where = f"experiment.questions[{i}]"
        if not isinstance(q, dict):
            raise AnalysisError(f"{where}: expected a table")
        unknown = sorted(set(q) - {"name", "effect", "by", "metric", "margin"})
        if unknown:
            raise AnalysisError(f"{where}: unknown key {unknown[0]!r}")
        effect = q.get("effect")
        if not isinstance(effect, str) or effect not in factors:
            raise AnalysisError(f"{where}.effect: {effect!r} is not a factor; factors are: "
                                + ", ".join(factors))
        by = q.get("by") or []
        if isinstance(by, str):
            by = [by]
        if not isinstance(by, list) or not all(isinstance(b, str) for b in by):
            raise AnalysisError(f"{where}.by: expected an array of factor names")
        for b in by:
            if b not in factors or b == effect:
                raise AnalysisError(f"{where}.by: {b!r} is not a factor other than the effect")
        metric = canonical(str(q.get("metric") or exp.get("response") or "p99_ms"))
        if metric not in METRICS:
            raise AnalysisError(f"{where}.metric: unknown metric {metric!r}; metrics are: "
                                + ", ".join(METRICS))
        name = str(q.get("name") or f"question {i + 1}")
        out.append(Question(name, effect, tuple(by), metric,
                            parse_margin(q.get("margin"), metric, f"{where}.margin")))
    return out


def level_label(level: str) -> str:
    """A level as a reader names it (`results.level_str`): one stored as the
    JSON of a linked factor's table becomes "mtls=true, tracing=1"."""
    try:
        value = json.loads(level)
    except (ValueError, TypeError):
        return level
    return level_str(value) if isinstance(value, dict) else level


@dataclass(frozen=True)
class Ratio:
    """One level of the effect over its first level, in one `by` cell."""

    by: tuple[tuple[str, str], ...]  # (factor, level) of the by cell; () without by
    level: str
    base: str
    ratio: float
    low: float
    high: float
    verdict: str  # "holds", "fails" (the margin's claim) or "differs"; "undecided"
    blocks: int = 0  # blocks that gave this ratio a value (sequential)
    # The interval's own confidence: the question's, shared among its ratios
    # (Bonferroni), so that all hold together at Answer.confidence.
    confidence: float = math.nan


@dataclass(frozen=True)
class Interaction:
    """A `by` cell's ratio over the first `by` cell's: does the effect differ?"""

    by: tuple[tuple[str, str], ...]
    base_by: tuple[tuple[str, str], ...]
    level: str
    ratio: float
    low: float
    high: float
    differs: bool | None  # None: no interval
    blocks: int = 0  # blocks that gave this ratio a value (sequential)
    confidence: float = math.nan  # the interval's own, as Ratio's


@dataclass(frozen=True)
class Answer:
    question: Question
    ratios: list[Ratio]
    interactions: list[Interaction]
    decided: bool
    runs: int  # runs the answer used
    confidence: float  # the question's overall confidence
    method: str  # "fixed" or "sequential"
    blocks: int = 0  # the fewest blocks any ratio used (sequential): what limits it
    flagged: int = 0  # runs left out: the generator was their bottleneck
    notes: list[str] = field(default_factory=list)


def judge(low: float, high: float, margin: Margin | None) -> str:
    """A ratio's interval against the question's claim."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "undecided"
    if margin is None:
        return "differs" if low > 1 or high < 1 else "undecided"
    lo = margin.low if margin.low is not None else 0.0
    hi = margin.high if margin.high is not None else math.inf
    if lo <= low and high <= hi:
        return "holds"
    if high < lo or low > hi:
        return "fails"
    return "undecided"


def _contrast_weights(q: Question, levels: Mapping[str, Sequence[str]], factors: Sequence[str],
                      by_cell: Mapping[str, str], level: str) -> dict[Cell, float]:
    """Weights of ln(level / base) in one by cell, averaged with equal weight
    over the other factors' level combinations."""
    others = [f for f in factors if f != q.effect and f not in by_cell]
    combos = list(_product([list(levels[f]) for f in others]))
    w: dict[Cell, float] = {}
    base = levels[q.effect][0]
    for combo in combos:
        fixed = dict(zip(others, combo, strict=True)) | dict(by_cell)
        for lv, sign in ((level, 1.0), (base, -1.0)):
            cell = tuple(lv if f == q.effect else fixed[f] for f in factors)
            w[cell] = w.get(cell, 0.0) + sign / len(combos)
    return w


def _product(choices: list[list[str]]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = [()]
    for c in choices:
        out = [(*o, v) for o in out for v in c]
    return out


def _block_values(data: pd.DataFrame, factors: Sequence[str], y: str,
                  weights: Mapping[Cell, float]) -> tuple[np.ndarray, list[Any]]:
    """The contrast in each block (repetition) that holds a run in every cell
    the contrast weighs, and those blocks. A block that lacks one of them (a
    run lost, or left out as flagged) is left out of this contrast only: the
    confidence sequence needs one value per block, from that block's runs."""
    cells = data.groupby(["repetition", *factors], observed=True)[y].mean()
    out, used = [], []
    for rep in sorted(data["repetition"].unique()):
        try:
            out.append(sum(w * float(cells.loc[(rep, *c)]) for c, w in weights.items()))
        except KeyError:
            continue
        used.append(rep)
    return np.array(out, dtype=float), used


def blocks_needed(confidence: float) -> int:
    """The fewest blocks whose confidence sequence at this confidence is
    finite (4 at 95%, 5 at 97.5%)."""
    n = 2
    while not math.isfinite(float(sequential.halfwidth_factor(n, 1 - confidence))):
        n += 1
    return n


def answer(q: Question, runs: pd.DataFrame, factors: Sequence[str],
           levels: Mapping[str, Sequence[str]], sequential_design: bool = False,
           confidence: float = 0.95) -> Answer:
    """Answer one question from the ok runs (one row per run: the factor
    columns, `repetition`, the metric, optionally `bottleneck`).

    `factors` are the design's factors that vary and `levels` their levels
    in the design's order; the first level of the effect is the base of
    every ratio and the first `by` cell the base of every interaction."""
    method = "sequential" if sequential_design else "fixed"
    notes: list[str] = []
    data = runs
    flagged = 0
    if "bottleneck" in data.columns:
        bad = data["bottleneck"].fillna(False).astype(bool)
        flagged = int(bad.sum())
        data = data[~bad]
    data = data[pd.to_numeric(data[q.metric], errors="coerce").notna()] \
        if q.metric in data.columns else data.iloc[0:0]
    empty = Answer(q, [], [], False, len(data), confidence, method, flagged=flagged, notes=notes)
    for f in (q.effect, *q.by):
        if f not in factors:
            notes.append(f"{f} takes one level in these runs: nothing to compare")
            return empty
    if data.empty:
        notes.append(f"no ok run has {q.metric}")
        return empty
    y = pd.to_numeric(data[q.metric]).astype(float)
    if (y <= 0).any():
        notes.append(f"{q.metric} is zero in some run: a ratio needs a positive metric")
        return empty
    data = data.assign(_ly=np.log(y.to_numpy()), **{f: data[f].astype(str) for f in factors})

    by_cells = [dict(zip(q.by, c, strict=True)) for c in _product([list(levels[b])
                                                                   for b in q.by])]
    eff_levels = list(levels[q.effect])
    k = (len(eff_levels) - 1) * len(by_cells)
    k_int = (len(eff_levels) - 1) * (len(by_cells) - 1)
    conf_each = 1 - (1 - confidence) / max(k, 1)
    conf_int = 1 - (1 - confidence) / max(k_int, 1)
    cm = cell_means(data, "_ly", list(factors), log=False)

    used: set[tuple[Any, Cell]] = set()  # (block, configuration) a sequential answer used

    def interval(w: Mapping[Cell, float], conf: float) -> tuple[float, float, float, int]:
        """(estimate, low, high, blocks) of a log contrast."""
        if sequential_design:
            d, reps = _block_values(data, factors, "_ly", w)
            used.update((rep, c) for rep in reps for c, v in w.items() if v != 0)
            cs = sequential.confidence_sequence(d, conf)
            return cs.mean, cs.low, cs.high, cs.n
        c = cell_contrast(cm, w, conf)
        return c.estimate, c.low, c.high, 0

    ratios: list[Ratio] = []
    logs: dict[tuple[int, str], tuple[float, dict[Cell, float]]] = {}
    try:
        for i, cell in enumerate(by_cells):
            for lv in eff_levels[1:]:
                w = _contrast_weights(q, levels, factors, cell, lv)
                est, lo, hi, nb = interval(w, conf_each)
                # An unbounded sequence (too few blocks) has no interval yet.
                low = math.exp(lo) if math.isfinite(lo) else math.nan
                high = math.exp(hi) if math.isfinite(hi) else math.nan
                ratios.append(Ratio(tuple(cell.items()), lv, eff_levels[0], math.exp(est),
                                    low, high, judge(low, high, q.margin), nb, conf_each))
                logs[(i, lv)] = (est, w)
    except AnalysisError as exc:
        notes.append(f"{exc}: the design lacks a configuration the question needs")
        return empty
    interactions: list[Interaction] = []
    for i, cell in enumerate(by_cells[1:], start=1):
        for lv in eff_levels[1:]:
            w = dict(logs[(i, lv)][1])
            for c, v in logs[(0, lv)][1].items():
                w[c] = w.get(c, 0.0) - v
            est, lo, hi, nb = interval(w, conf_int)
            finite = math.isfinite(lo) and math.isfinite(hi)
            interactions.append(Interaction(
                tuple(cell.items()), tuple(by_cells[0].items()), lv, math.exp(est),
                math.exp(lo) if finite else math.nan, math.exp(hi) if finite else math.nan,
                (lo > 0 or hi < 0) if finite else None, nb, conf_int))

    n_runs = len(data)
    blocks = 0
    if sequential_design:
        # The runs of the blocks the ratios and interactions took a value
        # from, in the configurations they weigh.
        keys = pd.MultiIndex.from_frame(data[["repetition", *factors]])
        n_runs = int(keys.isin([(rep, *c) for rep, c in used]).sum())
        blocks = min((r.blocks for r in ratios), default=0)
        need = blocks_needed(conf_each)
        if blocks < need:
            notes.append(f"{count(blocks, 'usable block')} for a ratio: the confidence sequence "
                         f"needs {need} or more for a finite interval; a block is usable for a "
                         "ratio when none of the runs it compares was lost or flagged")
    elif cm.dof <= 0:
        notes.append("one run per configuration: no error term, so no interval; run the "
                     "design again (experiment.repetitions ≥ 2, or until = \"decided\")")
    decided = bool(ratios) and all(r.verdict != "undecided" for r in ratios)
    return Answer(q, ratios, interactions, decided, n_runs, confidence, method, blocks,
                  flagged, notes)


def answer_all(questions: Sequence[Question], runs: pd.DataFrame, factors: Sequence[str],
               levels: Mapping[str, Sequence[str]], sequential_design: bool = False,
               confidence: float = 0.95) -> list[Answer]:
    """Every question answered: after each block of a sequential experiment,
    `all(a.decided for a in answer_all(...))` says whether it may stop."""
    return [answer(q, runs, factors, levels, sequential_design, confidence) for q in questions]


def experiment_answers(exp: Experiment, confidence: float = 0.95) -> list[Answer]:
    """The questions of a results directory's spec, answered from its ok runs
    (the response operation's metrics); [] when the spec declares none."""
    questions = parse_questions(exp.meta, exp.factor_names)
    if not questions:
        return []
    table = response_table(exp, exp.response_operation)
    table = table.merge(exp.runs[["run_id", "bottleneck"]], on="run_id", how="left")
    present = {f: set(table[f].dropna().astype(str)) for f in exp.factor_names}
    factors = [f for f in exp.factor_names if len(present[f]) >= 2]
    levels = {f.name: [lv for lv in f.levels if lv in present[f.name]] for f in exp.factors
              if f.name in factors}
    return answer_all(questions, table, factors, levels, is_sequential(exp.meta), confidence)


def answer_record(a: Answer) -> dict[str, Any]:
    """An answer as plain JSON-ready values (`svclab-analysis decide`)."""
    q = a.question

    def cell(by: tuple[tuple[str, str], ...]) -> dict[str, str]:
        return dict(by)

    def number(v: float) -> float | None:
        return v if math.isfinite(v) else None

    margin: Any = None
    if q.margin is not None:
        margin = {"kind": q.margin.kind, "given": q.margin.given, "low": q.margin.low,
                  "high": q.margin.high}
    return {
        "name": q.name, "effect": q.effect, "by": list(q.by), "metric": q.metric,
        "margin": margin, "decided": a.decided, "method": a.method, "runs": a.runs,
        "blocks": a.blocks, "flagged": a.flagged, "confidence": a.confidence,
        "ratios": [{"by": cell(r.by), "level": r.level, "base": r.base,
                    "ratio": number(r.ratio), "low": number(r.low), "high": number(r.high),
                    "verdict": r.verdict, "blocks": r.blocks, "confidence": r.confidence}
                   for r in a.ratios],
        "interactions": [{"by": cell(i.by), "base_by": cell(i.base_by), "level": i.level,
                          "ratio": number(i.ratio), "low": number(i.low),
                          "high": number(i.high), "differs": i.differs, "blocks": i.blocks,
                          "confidence": i.confidence}
                         for i in a.interactions],
        "notes": list(a.notes),
    }
