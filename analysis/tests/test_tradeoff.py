"""Latency beside errors: the winner's error rate and the fast-failure warning."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from synth import make_results

from svclab_analysis.report import build_report
from svclab_analysis.report.tradeoff import faster_but_failing, warnings, winner_errors


def ranked(rows: list[tuple[str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["configuration", "mean", "error_rate_pct"])


def test_fast_failures_are_named() -> None:
    # S1's case: 800 VU answers faster (fails fast) with 74% errors.
    r = ranked([("vus=800", 40.0, 74.0), ("vus=400", 90.0, 2.0), ("vus=200", 60.0, 0.0)])
    pairs = faster_but_failing(r, "mean_ms")
    got = set(zip(pairs["faster"], pairs["slower"], strict=True))
    # 800 beats both slower ones with more errors; 200 beats 400 with fewer
    # errors, which is no trade-off.
    assert got == {("vus=800", "vus=400"), ("vus=800", "vus=200")}
    # The largest rise in errors comes first: 74 - 0 before 74 - 2.
    assert list(pairs["slower"]) == ["vus=200", "vus=400"]
    (w,) = warnings(r, "mean_ms")
    assert w.startswith("mean latency improves while errors grow: vus=800 (40.0 ms, 74.0% errors)")
    assert "vs vus=200 (60.0 ms, 0% errors)" in w


def test_small_error_differences_and_other_metrics_are_quiet() -> None:
    r = ranked([("a", 1.0, 0.5), ("b", 2.0, 0.0)])  # 0.5 pp: below the 1 pp floor
    assert warnings(r, "p99_ms") == []
    r = ranked([("a", 1.0, 50.0), ("b", 2.0, 0.0)])
    assert warnings(r, "cpu_s_per_1k") == []  # not a latency
    assert winner_errors(r, "cpu_s_per_1k") == ""


def test_winner_clause() -> None:
    r = ranked([("fast", 1.0, 30.0), ("slow", 2.0, 0.0)])
    assert winner_errors(r, "p99_ms") == (
        " Its error rate is **30.0%**, against 0% for slow: its speed may be fast failures.")
    assert winner_errors(ranked([("a", 1.0, 0.0), ("b", 2.0, 3.0)]), "p99_ms") == (
        " Its error rate is **0%**.")


def test_report_answer_shows_the_winners_error_rate(tmp_path: Path) -> None:
    root = make_results(tmp_path / "r", samples=False)
    build_report(root)
    md = (root / "report.md").read_text()
    answer = md.split("## The answer", 1)[1].split("\n## ", 1)[0]
    # The synthetic winner (grpc, small) has no errors.
    assert "Its error rate is **0%**." in answer
