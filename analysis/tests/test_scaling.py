"""The autoscalers' decisions (scaling.parquet) in the results and the report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from synth import make_results

from svclab_analysis.report import build_report
from svclab_analysis.results import load_experiment, load_scaling, replicas_over_time


def _add_scaling(root: Path) -> list[str]:
    """Give every committed run a scaling.parquet: group g1 with a CPU and a
    memory target, scaled 1 → 3 at 2 s and 3 → 2 at 6 s. Returns the run ids."""
    ids = []
    for run in sorted((root / "runs").iterdir()):
        if run.name.startswith(".") or not (run / "summary.json").exists():
            continue
        ids.append(run.name)
        rows = []
        for t, cur, des in [(0.0, 1, 1), (2.0, 1, 3), (4.0, 3, 3), (6.0, 3, 2)]:
            for metric, util in [("cpu", 90), ("memory", 40)]:
                rows.append({"t_s": t, "group": "g1", "metric": metric,
                             "utilization_pct": util, "target_pct": 50, "current": cur,
                             "proposed": des, "desired": des, "reason": "", "error": ""})
        pd.DataFrame(rows).to_parquet(run / "scaling.parquet", index=False)
    return ids


def test_replicas_over_time(tmp_path: Path) -> None:
    root = make_results(tmp_path / "r", reps=2)
    ids = _add_scaling(root)
    exp = load_experiment(root)
    sc = load_scaling(exp)
    # 8 rows (4 decisions × 2 metrics) per ok run, with the factor columns.
    assert len(sc) == 8 * len(ids)
    assert set(exp.factor_names) <= set(sc.columns)
    reps = replicas_over_time(sc)
    one = reps[reps["run_id"] == ids[0]]
    # One row per decision, the metrics folded together.
    assert one["t_s"].tolist() == [0.0, 2.0, 4.0, 6.0]
    assert one["current"].tolist() == [1, 1, 3, 3]
    assert one["desired"].tolist() == [1, 3, 3, 2]
    assert "metric" not in reps.columns


def test_report_has_scaling_figure(tmp_path: Path) -> None:
    root = make_results(tmp_path / "r", reps=2)
    _add_scaling(root)
    html = build_report(root)
    md = (html.parent / "report.md").read_text()
    assert (html.parent / "figures" / "scaling.png").stat().st_size > 1000
    assert "](figures/scaling.png)" in md
    assert "replicas of each autoscaled group" in md


def test_no_scaling_no_figure(tmp_path: Path) -> None:
    root = make_results(tmp_path / "r", reps=2)
    exp = load_experiment(root)
    assert load_scaling(exp).empty
    html = build_report(root)
    assert not (html.parent / "figures" / "scaling.png").exists()
