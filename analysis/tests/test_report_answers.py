"""The report of issue 33: the spec's questions answered first, intervals a
positive quantity can support, and no error term claimed without
replication. Stores in the RESULTS.md layout (tests/stores.py)."""

from __future__ import annotations

import io
import json
import math
import re
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from stores import write_store
from test_questions import SPEC  # the new user's question, as issue 33 writes it
from test_report import section

from svclab_analysis import cli, plots
from svclab_analysis.formatting import num
from svclab_analysis.report import build_report
from svclab_analysis.sequential import halfwidth_factor

OFF = {"deploy.mtls": False, "deploy.tracing": 0.0}
ON = {"deploy.mtls": True, "deploy.tracing": 1.0}
NOISE = [0.98, 1.0, 1.02]  # per repetition: the same spread in every configuration


def mesh_values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
    cost = (1.30 if lv["deploy.transport"] == "grpc" else 1.03) if lv["mesh"] == ON else 1.0
    return {"total": {"p50_ms": 2.0 * cost * NOISE[rep - 1]}}


def with_spec(d: Path, spec_text: str) -> Path:
    meta = json.loads((d / "experiment.json").read_text())
    meta["spec_text"] = spec_text
    (d / "experiment.json").write_text(json.dumps(meta))
    return d


def question_store(root: Path, reps: int = 3) -> Path:
    d = write_store(root, "mesh-cost", [("deploy.transport", ["grpc", "http"]),
                                        ("mesh", [OFF, ON])], mesh_values, reps=reps)
    return with_spec(d, SPEC)


def test_questions_are_answered_first(tmp_path: Path) -> None:
    d = question_store(tmp_path)
    build_report(d)
    md = (d / "report.md").read_text()
    heads = [ln[3:] for ln in md.splitlines() if ln.startswith("## ")]
    assert heads[:2] == ["Answers to the questions", "The answer"]
    q = section(md, "Answers to the questions")
    items = [ln for ln in q.splitlines() if ln.startswith("**")]
    assert len(items) == 1  # one sentence per question
    s = items[0]
    # Every configuration's runs are 2·cost·(0.98, 1.00, 1.02): the pooled
    # sd of ln y is s = 0.020003 on 12 − 4 = 8 degrees of freedom, a ratio's
    # standard error s·√(2/3) = 0.016332 and Bonferroni's t(1 − 0.025/2; 8)
    # = 2.7515, so grpc's 1.30 has 1.30·exp(±0.044937) = 1.24–1.36 (beyond
    # the 1.10 margin) and http's 1.03 has 0.985–1.08 (inside it). The
    # interaction 1.03/1.30 = 0.792 has s·√(4/3) and t(0.975; 8) = 2.3060:
    # 0.751–0.836.
    assert s.startswith("**mesh cost by transport**: p50 latency with mesh = "
                        "mtls=true, tracing=1 over mtls=false, tracing=0 is ")
    assert "**1.30×** with transport=grpc (97.5% CI 1.24–1.36×; misses the " \
           "non-inferiority margin ≤ 1.10×)" in s
    assert "**1.03×** with transport=http (97.5% CI 0.985–1.08×; meets the " \
           "non-inferiority margin ≤ 1.10×)" in s
    assert ("the ratio is 0.792× as large with transport=http as with transport=grpc "
            "(95% CI 0.751–0.836×: a difference)") in s
    assert "**decided** after 12 runs." in s
    assert "Student's t on the log scale from the cell-means model" in q
    # The linked factor's levels read as keys in the per-level table too.
    assert "| mesh | mtls=true, tracing=1 | 2 | 6 |" in md


def test_decide_prints_the_state_for_the_runner(tmp_path: Path) -> None:
    d = question_store(tmp_path)
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["decide", str(d), "--format", "json"]) == 0
    got = json.loads(out.getvalue())
    assert got["decided"] is True and got["sequential"] is False
    (q,) = got["questions"]
    assert q["runs"] == 12 and q["margin"]["kind"] == "non-inferiority"
    assert [r["verdict"] for r in q["ratios"]] == ["fails", "holds"]
    assert q["ratios"][0]["ratio"] == pytest.approx(1.30)
    assert cli.main(["decide", str(write_store(tmp_path, "none", [("a", [1, 2])],
                                               lambda lv, rep: {"total": {"p50_ms": 1.0}},
                                               reps=2))]) == 2


def test_sequential_questions_use_the_confidence_sequence(tmp_path: Path) -> None:
    d = question_store(tmp_path, reps=3)
    with_spec(d, SPEC.replace("repetitions = 3", 'until = "decided"'))
    build_report(d)
    q = section((d / "report.md").read_text(), "Answers to the questions")
    # Three blocks: the sequence is unbounded until the fourth.
    assert "no interval" in q and "**not decided** after 12 runs in 3 blocks" in q
    assert "anytime-valid t confidence sequence over blocks (Lai 1976" in q


def test_one_run_per_configuration_claims_no_error_term(tmp_path: Path) -> None:
    d = question_store(tmp_path, reps=1)
    build_report(d)
    md = (d / "report.md").read_text()
    answer = section(md, "The answer")
    assert "**No error term:**" in answer and "`experiment.repetitions`" in answer
    assert "differences between repeated runs explain" not in answer
    assert "| error (between runs) |" in answer
    assert not re.search(r"\| error \(between runs\) \|[^\n]*\| 0 \|", answer)
    pairs = section(md, "Pairwise comparisons")
    assert "No test: each configuration ran once" in pairs
    assert "Mann-Whitney U" not in pairs
    assert "Kruskal" not in pairs and "Dunn" not in pairs
    q = section(md, "Answers to the questions")
    assert "no error term" in q and "**not decided**" in q


def test_no_interval_of_a_positive_metric_goes_below_zero(tmp_path: Path) -> None:
    # The quickstart's p99: three runs of 1.9, 3.1 and 26 ms, where Student's
    # t on the original scale gave "−15.3 to 31.7 ms".
    spread = [1.9, 3.1, 26.0]

    def values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
        k = 1.0 if lv["deploy.transport"] == "grpc" else 1.2
        return {"total": {"p50_ms": k * spread[rep - 1] / 3, "p95_ms": k * spread[rep - 1] / 2,
                          "p99_ms": k * spread[rep - 1]}}

    d = write_store(tmp_path, "quick", [("deploy.transport", ["grpc", "http"]),
                                        ("app.size", ["std", "large"])], values, reps=3)
    build_report(d)
    md = (d / "report.md").read_text()
    # The ranking and every per-metric and per-level table; the effects table
    # holds differences (effects q), which may rightly be negative.
    for text in (section(md, "The answer").split("### Effects")[0],
                 section(md, "Per-metric tables")):
        # ci() writes "a to b" exactly when a bound is negative.
        assert "| 95% CI (ms) |" in text
        assert not re.search(r"−[0-9.]+ to ", text)
    # The pooled per-level table gave this level's six runs a Student-t
    # interval of −0.921 to 8.50 ms. Its marginal geometric mean is exp of
    # the mean of ln y over the two configurations (three runs each), with
    # a log-scale interval above zero.
    row = re.search(r"\| app\.size \| std \| 2 \| 6 \| ([0-9.]+) \| ([0-9.]+)–([0-9.]+) \|", md)
    assert row is not None
    lo, hi = float(row.group(2)), float(row.group(3))
    assert 0 < lo < float(row.group(1)) < hi
    x = np.log([k * v / 3 for k in (1.0, 1.2) for v in spread])
    assert float(row.group(1)) == pytest.approx(math.exp(x.mean()), rel=5e-3)


def test_unreplicated_anova_names_its_residual(tmp_path: Path) -> None:
    def values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
        base = {"default": 10.0, "obs": 12.0, "mtls": 11.0}[lv["mesh.setup"]]
        return {"total": {"p50_ms": base * (1.5 if lv["load.rate"] == 100 else 1.0)
                          + 0.1 * len(lv["mesh.setup"])}}

    d = write_store(tmp_path, "s2-like", [("mesh.setup", ["default", "obs", "mtls"]),
                                          ("load.rate", [10, 100])], values, reps=1)
    build_report(d)
    answer = section((d / "report.md").read_text(), "The answer")
    assert "| residual (the highest interaction) |" in answer
    assert "error (between runs)" not in answer.split("### ANOVA")[1].split("###")[0]
    assert "the last row is the highest-order interaction" in answer
    assert "no F test and no p-value" in answer


def test_a_bad_question_is_a_warning_in_the_report_and_an_error_to_decide(
        tmp_path: Path) -> None:
    d = question_store(tmp_path)
    with_spec(d, SPEC.replace('effect = "mesh"', 'effect = "meshh"'))
    build_report(d)
    md = (d / "report.md").read_text()
    assert "## Answers to the questions" not in md
    assert ("the spec's questions are not answered: experiment.questions[0].effect: "
            "'meshh' is not a factor") in section(md, "Warnings")
    assert cli.main(["decide", str(d)]) == 2


def test_sequential_answer_from_blocks(tmp_path: Path) -> None:
    """Six blocks with run-to-run noise: each block's log ratio enters the
    confidence sequence, and the sentence reports its interval and blocks."""
    rng = np.random.default_rng(5)
    noise = {(t, m, rep): float(rng.normal(0, 0.03)) for t in ("grpc", "http")
             for m in ("off", "on") for rep in range(1, 7)}

    def values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
        t, m = lv["deploy.transport"], "on" if lv["mesh"] == ON else "off"
        cost = (1.30 if t == "grpc" else 1.03) if m == "on" else 1.0
        return {"total": {"p50_ms": 2.0 * cost * math.exp(noise[(t, m, rep)])}}

    d = write_store(tmp_path, "mesh-seq", [("deploy.transport", ["grpc", "http"]),
                                           ("mesh", [OFF, ON])], values, reps=6)
    with_spec(d, SPEC.replace("repetitions = 3", 'until = "decided"'))
    build_report(d)
    q = section((d / "report.md").read_text(), "Answers to the questions")
    grpc = np.array([math.log(1.30) + noise[("grpc", "on", r)] - noise[("grpc", "off", r)]
                     for r in range(1, 7)])
    half = float(halfwidth_factor(6, 0.025)) * float(np.std(grpc, ddof=1))
    lo, hi = math.exp(grpc.mean() - half), math.exp(grpc.mean() + half)
    assert lo > 1.10  # the mesh's 30% over grpc is beyond the margin after six blocks
    assert (f"with transport=grpc (97.5% CI {num(lo)}–{num(hi)}×; misses the "
            "non-inferiority margin ≤ 1.10×)") in q
    assert "after 24 runs in 6 blocks" in q


def test_a_flagged_run_drops_its_block_from_its_own_ratio_only(tmp_path: Path) -> None:
    # Six blocks; in each the generator flags one run, a different
    # configuration each time, so no block holds all four unflagged. The
    # grpc ratio loses the blocks whose flagged run is a grpc one (1, 3, 5),
    # the http ratio the others (2, 4, 6): each keeps three blocks, six runs.
    cells = [("grpc", OFF), ("http", OFF), ("grpc", ON), ("http", ON), ("grpc", OFF),
             ("http", ON)]

    def flagged(lv: dict[str, Any], rep: int) -> bool:
        return (lv["deploy.transport"], lv["mesh"]) == cells[rep - 1]

    def values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
        return {"total": {"p50_ms": 2.0 * (1.2 if lv["mesh"] == ON else 1.0) * (1 + rep / 100)}}

    d = write_store(tmp_path, "flags", [("deploy.transport", ["grpc", "http"]),
                                        ("mesh", [OFF, ON])], values, reps=6,
                    bottleneck=flagged)
    with_spec(d, SPEC.replace("repetitions = 3", 'until = "decided"'))
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["decide", str(d), "--format", "json"]) == 0
    (got,) = json.loads(out.getvalue())["questions"]
    assert got["flagged"] == 6 and got["blocks"] == 3 and got["runs"] == 12
    assert [r["blocks"] for r in got["ratios"]] == [3, 3]
    assert got["ratios"][0]["level"] == "mtls=true, tracing=1"
    # Two ratios share 5% (Bonferroni): 97.5% each needs five blocks.
    assert any("needs 5 or more" in n for n in got["notes"])
    assert [r["confidence"] for r in got["ratios"]] == [pytest.approx(0.975)] * 2
    assert [i["confidence"] for i in got["interactions"]] == [pytest.approx(0.95)]
    build_report(d)
    q = section((d / "report.md").read_text(), "Answers to the questions")
    assert "**not decided** after 12 runs in 3 blocks, leaving out 6 runs" in q
    # decide's lines name each interval's level, as the report does.
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["decide", str(d), "--confidence", "0.9"]) == 0
    lines = [ln for ln in out.getvalue().splitlines() if ln.startswith("  deploy.transport=")]
    assert len(lines) == 2 and all("(95% CI " in ln for ln in lines), out.getvalue()


def test_a_linked_factors_levels_read_as_the_questions_name_them(tmp_path: Path) -> None:
    d = question_store(tmp_path)
    build_report(d)
    md = (d / "report.md").read_text()
    assert '{"' not in md
    rank = section(md, "The answer")
    assert "| 1 | grpc | mtls=false, tracing=0 |" in rank
    assert "mesh: −1 = mtls=false, tracing=0, +1 = mtls=true, tracing=1" in md
    assert "| B | mesh | mtls=false, tracing=0, mtls=true, tracing=1 | yes |" in md


def test_flagged_runs_are_marked_and_left_out_of_the_answers(tmp_path: Path) -> None:
    # The generator flags grpc's mesh run of repetition 2: the ranking and the
    # box plot keep and mark it, the answer leaves it out and says so, and
    # decide's lines count it.
    def flag(lv: dict[str, Any], rep: int) -> bool:
        return lv["deploy.transport"] == "grpc" and lv["mesh"] == ON and rep == 2

    d = with_spec(write_store(tmp_path, "mesh-cost", [("deploy.transport", ["grpc", "http"]),
                                                       ("mesh", [OFF, ON])], mesh_values,
                              reps=3, bottleneck=flag), SPEC)
    build_report(d)
    md = (d / "report.md").read_text()
    answer = section(md, "The answer")
    rows = {ln.split(" | ")[1] + "/" + ln.split(" | ")[2]: ln.rstrip(" |").rsplit(" | ", 1)[-1]
            for ln in answer.splitlines() if re.match(r"\| \d", ln)}
    assert rows["grpc/mtls=true, tracing=1"] == "3 (1 flagged)"
    assert [v for k, v in rows.items() if k != "grpc/mtls=true, tracing=1"] == ["3"] * 3
    assert ("1 run the load generator flagged is counted here and marked in the runs "
            "column and the plots") in answer
    assert "The answers to the questions leave it out." in answer
    assert "A run the load generator flagged is drawn as ×." in section(md, "Plots")
    q = section(md, "Answers to the questions")
    assert "after 11 runs, leaving out 1 run the load generator flagged" in q
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["decide", str(d)]) == 0
    assert "(11 runs, 1 flagged left out)" in out.getvalue()


def test_plots_draw_flagged_runs_apart() -> None:
    table = pd.DataFrame({"c": ["a", "a", "a", "b", "b", "b"],
                          "y": [1.0, 1.1, 1.2, 2.0, 2.1, 2.2]})
    none = plots.boxplot(table, "y", "c", ["a", "b"], "y", "t")
    assert plots.boxplot(table, "y", "c", ["a", "b"], "y", "t",
                         flagged=pd.Series(False, index=table.index)) == none
    one = pd.Series([False, False, True, False, False, False], index=table.index)
    assert plots.boxplot(table, "y", "c", ["a", "b"], "y", "t", flagged=one) != none
    ts = pd.DataFrame({"c": ["a"] * 6, "run_id": ["r1"] * 3 + ["r2"] * 3,
                       "second": [0, 1, 2] * 2, "p99_ms": [1.0, 1.2, 1.1, 2.0, 2.2, 2.1],
                       "rps": [10.0] * 6})
    plain = plots.timeseries(ts, "c", ["a"], "p99_ms", "p99", "t")
    assert plots.timeseries(ts, "c", ["a"], "p99_ms", "p99", "t", flagged={"r9"}) == plain
    assert plots.timeseries(ts, "c", ["a"], "p99_ms", "p99", "t", flagged={"r2"}) != plain


def test_pairwise_paragraph_names_what_it_compares(tmp_path: Path) -> None:
    # One factor: Mann-Whitney between its levels. Two: Kruskal-Wallis and
    # Dunn between configurations, whose p are not adjusted "within each
    # factor" (only the marginal means' are).
    one = write_store(tmp_path, "one", [("deploy.transport", ["grpc", "http", "netrpc"])],
                      lambda lv, rep: {"total": {"p50_ms": 1.0 + 0.1 * rep}}, reps=3)
    build_report(one)
    pw = section((one / "report.md").read_text(), "Pairwise comparisons")
    assert ("Mann-Whitney U on run-level p50 latency between the levels of "
            "deploy.transport, the only factor") in pw
    two = question_store(tmp_path / "two")
    build_report(two)
    pw = section((two / "report.md").read_text(), "Pairwise comparisons")
    assert "Between configurations, whose runs are repeats: Kruskal-Wallis and Dunn's" in pw
    assert "within each factor. Rank-biserial" not in pw
