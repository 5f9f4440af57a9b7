"""Faults in the results: run.json's fault windows, the success rate around
them, and the report's figure."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
from synth import make_results

from svclab_analysis.faults import around_faults, load_faults, success_over_time
from svclab_analysis.report import build_report
from svclab_analysis.results import load_experiment

# A 10-second run at 100 requests a second; the hop is cut from 3.0 to 5.5 s.
# Requests end (and count) in seconds 3, 4 and 5 failing: 100, 100 and 50
# errors; latency is 2 ms outside and 1000 ms inside (the timeout).
ERRORS = [0, 0, 0, 100, 100, 50, 0, 0, 0, 0]
P99 = [2.0, 2.0, 2.0, 1000.0, 1000.0, 1000.0, 30.0, 2.0, 2.0, 2.0]
CUT = {"kind": "link_cut", "target": "hop2", "from_s": 3.0, "to_s": 5.5}


def _add_faults(root: Path) -> list[str]:
    """Give every committed run the series above and the cut in run.json."""
    ids = []
    for run in sorted((root / "runs").iterdir()):
        if run.name.startswith(".") or not (run / "summary.json").exists():
            continue
        ids.append(run.name)
        ts = pd.DataFrame({"second": range(10), "operation": "total", "requests": 100,
                           "errors": ERRORS, "rps": 100.0, "p50_ms": P99, "p90_ms": P99,
                           "p99_ms": P99})
        ts.to_parquet(run / "timeseries.parquet", index=False)
        rj = json.loads((run / "run.json").read_text())
        rj["faults"] = [CUT]
        (run / "run.json").write_text(json.dumps(rj))
    return ids


def test_success_and_around_faults(tmp_path: Path) -> None:
    root = make_results(tmp_path / "r", reps=2)
    ids = _add_faults(root)
    exp = load_experiment(root)
    faults = load_faults(exp)
    assert sorted(faults["run_id"]) == sorted(i for i in ids if i in set(exp.ok_runs()["run_id"]))
    assert set(exp.factor_names) <= set(faults.columns)
    ts = pd.concat([pd.read_parquet(root / "runs" / i / "timeseries.parquet").assign(run_id=i)
                    for i in faults["run_id"]])
    s = success_over_time(ts)
    one = s[s["run_id"] == faults["run_id"].iloc[0]]
    assert one["success"].tolist() == [1.0, 1.0, 1.0, 0.0, 0.0, 0.5, 1.0, 1.0, 1.0, 1.0]
    a = around_faults(ts, faults)
    row = a.iloc[0]
    # before: seconds 0–2, all good; during: seconds 3–5, 250 of 300 failed;
    # after: from second 5 + 1 + 1 = 7 on (second 6, the reconnection, is
    # left out), all good.
    assert row["success_before"] == 1.0
    assert math.isclose(row["success_during"], 50 / 300)
    assert row["success_after"] == 1.0
    assert row["p99_ms_before"] == 2.0 and row["p99_ms_during"] == 1000.0
    assert row["p99_ms_after"] == 2.0
    # With no settling time the reconnection second counts as after.
    assert around_faults(ts, faults, settle_s=0).iloc[0]["p99_ms_after"] == 2.0
    assert len(a) == len(faults)


def test_kill_window(tmp_path: Path) -> None:
    ts = pd.DataFrame({"run_id": "r", "second": range(6), "requests": 100,
                       "errors": [0, 0, 3, 1, 0, 0], "p99_ms": 2.0})
    kill = pd.DataFrame([{"run_id": "r", "kind": "kill", "target": "hop2", "from_s": 2.4,
                          "to_s": 2.4}])
    row = around_faults(ts, kill).iloc[0]
    # A kill's window is the second it happened in and the next.
    assert math.isclose(row["success_during"], 1 - 4 / 200)
    assert row["success_after"] == 1.0


def test_report_has_faults_figure(tmp_path: Path) -> None:
    root = make_results(tmp_path / "r", reps=2)
    _add_faults(root)
    html = build_report(root)
    md = (html.parent / "report.md").read_text()
    assert (html.parent / "figures" / "faults.png").stat().st_size > 1000
    assert "](figures/faults.png)" in md


def test_no_faults_no_figure(tmp_path: Path) -> None:
    root = make_results(tmp_path / "r", reps=2)
    html = build_report(root)
    assert not (html.parent / "figures" / "faults.png").exists()
    assert load_faults(load_experiment(root)).empty
