"""Questions declared in the spec (issue 33, section 1): parsed from
experiment.json, answered as ratios with intervals checked against
statsmodels, judged against margins."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.formula.api import ols

from svclab_analysis import questions as qs
from svclab_analysis.errors import AnalysisError

OFF = json.dumps({"deploy.mtls": False, "deploy.tracing": 0.0})
ON = json.dumps({"deploy.mtls": True, "deploy.tracing": 1.0})
LEVELS = {"deploy.transport": ["grpc", "http"], "mesh": [OFF, ON], "load.rate": ["10", "100"]}
FACTORS = ["deploy.transport", "mesh", "load.rate"]

SPEC = """
[experiment]
repetitions = 3
[[experiment.questions]]
name = "mesh cost by transport"
effect = "mesh"
by = ["deploy.transport"]
metric = "p50_ms"
margin = 1.10
[experiment.factors]
"deploy.transport" = ["grpc", "http"]
mesh = [ { "deploy.mtls" = false, "deploy.tracing" = 0.0 },
         { "deploy.mtls" = true,  "deploy.tracing" = 1.0 } ]
"""


def design_runs(reps: int = 3, seed: int = 0, flag: int = 0) -> pd.DataFrame:
    """The issue's design with a third factor averaged over: the mesh costs
    30% over grpc and 4% over http."""
    rng = np.random.default_rng(seed)
    rows = []
    for rep in range(1, reps + 1):
        for t in LEVELS["deploy.transport"]:
            for m in LEVELS["mesh"]:
                for r in LEVELS["load.rate"]:
                    cost = (1.30 if t == "grpc" else 1.04) if m == ON else 1.0
                    y = 2.0 * cost * (1.5 if r == "100" else 1.0) * math.exp(rng.normal(0, .02))
                    rows.append({"repetition": rep, "deploy.transport": t, "mesh": m,
                                 "load.rate": r, "p50_ms": y, "throughput_rps": 100 / cost,
                                 "bottleneck": False})
    df = pd.DataFrame(rows)
    df.loc[df.index[:flag], "bottleneck"] = True
    return df


def test_parse_from_spec_text_under_the_issue_keys():
    (q,) = qs.parse_questions({"spec_text": SPEC}, FACTORS)
    assert q == qs.Question("mesh cost by transport", "mesh", ("deploy.transport",), "p50_ms",
                            qs.Margin(None, 1.10, "non-inferiority", 1.10))
    assert not qs.is_sequential({"spec_text": SPEC})
    # A resolved spec object wins over the text.
    spec = {"experiment": {"until": "decided", "questions": [{"effect": "mesh"}]}}
    (q2,) = qs.parse_questions({"spec": spec, "spec_text": SPEC}, FACTORS)
    assert q2.by == () and q2.margin is None and q2.name == "question 1"
    assert qs.is_sequential({"spec": spec})
    assert qs.parse_questions({}, FACTORS) == []


@pytest.mark.parametrize(("q", "message"), [
    ({"effect": "nope"}, "experiment.questions[0].effect: 'nope' is not a factor"),
    ({"effect": "mesh", "by": ["mesh"]}, "experiment.questions[0].by"),
    ({"effect": "mesh", "metric": "p42"}, "experiment.questions[0].metric"),
    ({"effect": "mesh", "margin": 1}, "experiment.questions[0].margin"),
    ({"effect": "mesh", "margin": [1.2, 0.9]}, "experiment.questions[0].margin"),
    ({"effect": "mesh", "margins": 1.1}, "unknown key 'margins'"),
])
def test_bad_questions_name_their_key(q, message):
    with pytest.raises(AnalysisError, match=message.replace("[", r"\[").replace("]", r"\]")):
        qs.parse_questions({"spec": {"experiment": {"questions": [q]}}}, FACTORS)


def test_margins_by_direction():
    assert qs.parse_margin(0.9, "p99_ms", "m") == qs.Margin(None, 0.9, "superiority", 0.9)
    # Throughput is better higher: "no more than 10% worse" is ratio ≥ 1/1.1.
    m = qs.parse_margin(1.1, "throughput_rps", "m")
    assert m is not None and m.low == pytest.approx(1 / 1.1) and m.high is None
    assert qs.parse_margin([0.9, 1.1], "p99_ms", "m") == qs.Margin(0.9, 1.1, "equivalence",
                                                                    (0.9, 1.1))
    eq = qs.Margin(0.9, 1.1, "equivalence", (0.9, 1.1))
    assert qs.judge(0.95, 1.05, eq) == "holds"
    assert qs.judge(1.12, 1.3, eq) == "fails"
    assert qs.judge(1.0, 1.2, eq) == "undecided"
    assert qs.judge(1.01, 1.2, None) == "differs"
    assert qs.judge(0.9, 1.2, None) == "undecided"
    assert qs.judge(math.nan, math.nan, eq) == "undecided"


def test_fixed_answer_matches_statsmodels_cell_means():
    runs = design_runs()
    (q,) = qs.parse_questions({"spec_text": SPEC}, FACTORS)
    a = qs.answer(q, runs, FACTORS, LEVELS, confidence=0.95)
    df = runs.assign(ly=np.log(runs["p50_ms"]), t=runs["deploy.transport"],
                     m=runs["mesh"].map({OFF: "off", ON: "on"}), r=runs["load.rate"])
    fit = ols("ly ~ C(t):C(m):C(r) - 1", data=df).fit()
    names = list(fit.params.index)

    def vec(weights: dict[tuple[str, str], float]) -> np.ndarray:
        # Equal weight over load.rate's two levels.
        return np.array([sum(w / 2 for (t, m), w in weights.items()
                             if f"C(t)[{t}]" in n and f"C(m)[{m}]" in n) for n in names])

    assert a.method == "fixed" and a.runs == len(runs) and a.flagged == 0
    for ratio, t in zip(a.ratios, ["grpc", "http"], strict=True):
        test = fit.t_test(vec({(t, "on"): 1.0, (t, "off"): -1.0}))
        lo, hi = test.conf_int(alpha=0.05 / 2)[0]  # Bonferroni over the two by levels
        assert ratio.by == (("deploy.transport", t),)
        assert ratio.ratio == pytest.approx(math.exp(float(test.effect[0])))
        assert (ratio.low, ratio.high) == pytest.approx((math.exp(lo), math.exp(hi)))
    assert a.ratios[0].verdict == "fails"  # grpc: 1.30 > 1.10
    assert a.ratios[1].verdict == "holds"  # http: 1.04 ≤ 1.10
    assert a.decided
    (ia,) = a.interactions
    test = fit.t_test(vec({("http", "on"): 1, ("http", "off"): -1, ("grpc", "on"): -1,
                           ("grpc", "off"): 1}))
    lo, hi = test.conf_int(alpha=0.05)[0]
    assert ia.ratio == pytest.approx(math.exp(float(test.effect[0])))
    assert (ia.low, ia.high) == pytest.approx((math.exp(lo), math.exp(hi)))
    assert ia.differs is True and ia.ratio < 1


def test_one_run_per_configuration_has_no_interval():
    runs = design_runs(reps=1)
    (q,) = qs.parse_questions({"spec_text": SPEC}, FACTORS)
    a = qs.answer(q, runs, FACTORS, LEVELS)
    assert a.ratios and all(math.isnan(r.low) and r.verdict == "undecided" for r in a.ratios)
    assert not a.decided
    assert any("no error term" in n for n in a.notes)


def test_flagged_runs_are_left_out_and_counted():
    runs = design_runs(flag=3)
    q = qs.Question("mesh", "mesh", (), "p50_ms")
    a = qs.answer(q, runs, FACTORS, LEVELS)
    assert a.flagged == 3 and a.runs == len(runs) - 3


def test_sequential_answer_needs_complete_blocks():
    runs = design_runs(reps=6, seed=2)
    q = qs.Question("mesh", "mesh", (), "p50_ms", qs.parse_margin(1.5, "p50_ms", "m"))
    # A lost run makes its block incomplete: it is left out.
    runs = runs.drop(runs.index[(runs["repetition"] == 2)][:1])
    a = qs.answer(q, runs, FACTORS, LEVELS, sequential_design=True)
    assert a.method == "sequential" and a.blocks == 5 and a.runs == 5 * 8
    assert a.ratios[0].verdict == "holds"  # 1.17 overall, well under 1.5
    few = qs.answer(q, runs[runs["repetition"] <= 3], FACTORS, LEVELS, sequential_design=True)
    assert not few.decided and any("4 or more" in n for n in few.notes)
    # Unbounded so far: no interval, rather than 0 to infinity.
    assert math.isnan(few.ratios[0].low) and math.isnan(few.ratios[0].high)


def test_level_label_of_a_linked_factor():
    assert qs.level_label(ON) == "mtls=true, tracing=1"
    assert qs.level_label("grpc") == "grpc"
    assert qs.level_label("10") == "10"
