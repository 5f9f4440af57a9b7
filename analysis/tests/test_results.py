"""The result store reader on a synthetic store written exactly as docs/RESULTS.md says."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from synth import make_results

from svclab_analysis.errors import AnalysisError
from svclab_analysis.formatting import num
from svclab_analysis.results import (
    cpu_seconds,
    hdr_quantiles,
    load_experiment,
    response_table,
    window_cpu_seconds,
)


def test_runs_and_run_level_metrics(results_dir: Path) -> None:
    exp = load_experiment(results_dir)
    assert exp.response_metric == "p99_ms" and exp.response_operation == "total"
    assert [f.name for f in exp.factors] == ["deploy.transport", "app.payload"]
    assert [f.levels for f in exp.factors] == [["grpc", "http"], ["small", "large"]]
    # 12 ok runs plus one failed; the .tmp- directory is not a run.
    assert len(exp.runs) == 13
    assert (exp.runs["status"] == "ok").sum() == 12
    failed = exp.runs[exp.runs["status"] == "failed"].iloc[0]
    assert "exited with status 2" in failed["reason"]
    assert exp.runs.loc[exp.runs["index"] == 2, "bottleneck"].item()
    t = response_table(exp)
    assert len(t) == 12
    cell = t[(t["deploy.transport"] == "grpc") & (t["app.payload"] == "small")]
    assert sorted(cell["p99_ms"]) == pytest.approx([1.9, 2.0, 2.1])
    # 0.5 CPU-s per second of the 10 s window over 1000 requests.
    assert t["cpu_s_per_1k"].tolist() == pytest.approx([5.0] * 12)
    # 1000 requests with 2 errors in the last cell: 0.2% errors, 99.8 req/s served.
    last = t[(t["deploy.transport"] == "http") & (t["app.payload"] == "large")]
    assert last["error_rate_pct"].tolist() == pytest.approx([0.2] * 3)
    assert last["throughput_rps"].tolist() == pytest.approx([99.8] * 3)
    assert set(exp.metrics["operation"]) == {"total", "Echo"}


def test_cpu_seconds_window_and_pids() -> None:
    res = pd.DataFrame({
        "t_s": [-1.0, 0.0, 5.0, 10.0, 11.0, 0.0, 10.0, 0.0, 10.0],
        "process": ["g0"] * 5 + ["g0"] * 2 + ["loadgen"] * 2,
        "pid": [1] * 5 + [2] * 2 + [3] * 2,
        "cpu_s": [1.0, 2.0, 4.0, 6.0, 99.0, 0.0, 1.5, 0.0, 50.0],
    })
    # pid 1: 6 - 2 = 4 s inside [0, 10]; pid 2 (a replica): 1.5 s; loadgen excluded.
    assert cpu_seconds(res, 10.0) == pytest.approx(5.5)


def test_cpu_seconds_leaves_out_every_generator() -> None:
    # Several generators (loadgen#I) and kube load pods (named after the
    # pod, role loadgen) are no more the system under test than loadgen.
    rows = [("g0", "host", 1, 0.0, 0.0), ("g0", "host", 1, 10.0, 3.0),
            ("loadgen", "loadgen", 2, 0.0, 0.0), ("loadgen", "loadgen", 2, 10.0, 7.0),
            ("loadgen#1", "loadgen", 3, 0.0, 0.0), ("loadgen#1", "loadgen", 3, 10.0, 5.0),
            ("load-0-x7k2p", "loadgen", 0, 0.0, 0.0), ("load-0-x7k2p", "loadgen", 0, 10.0, 9.0)]
    res = pd.DataFrame(rows, columns=["process", "role", "pid", "t_s", "cpu_s"])
    assert cpu_seconds(res, 10.0) == pytest.approx(3.0)
    # A store written before the role column: the names say it.
    assert cpu_seconds(res.drop(columns=["role"]).iloc[:6], 10.0) == pytest.approx(3.0)


def test_telemetry_backends_are_apart_from_the_system() -> None:
    # Jaeger and Prometheus (role telemetry) are sampled, but a collector
    # is not the system under test: its CPU is counted on its own.
    jaeger, prom = "telemetry.jaeger", "telemetry.prometheus"
    rows = [("hop1", "host", 1, -1.0, 0.5), ("hop1", "host", 1, 0.0, 1.0),
            ("hop1", "host", 1, 12.0, 4.0),
            ("hop1.envoy", "sidecar", 2, 0.0, 0.0), ("hop1.envoy", "sidecar", 2, 12.0, 1.25),
            (jaeger, "telemetry", 3, 0.0, 2.0), (jaeger, "telemetry", 3, 6.0, 2.5),
            (jaeger, "telemetry", 3, 12.0, 3.0),
            (prom, "telemetry", 4, 0.0, 1.0), (prom, "telemetry", 4, 12.0, 1.5)]
    res = pd.DataFrame(rows, columns=["process", "role", "pid", "t_s", "cpu_s"])
    # host 4 - 1 = 3 s, sidecar 1.25 s; the backends 1 + 0.5 s stay out.
    assert cpu_seconds(res, 12.0) == pytest.approx(4.25)
    tele = res[res["role"] == "telemetry"]
    assert window_cpu_seconds(tele, 12.0) == pytest.approx(1.5)
    # Every row counts in window_cpu_seconds, whatever its role.
    assert window_cpu_seconds(res, 12.0) == pytest.approx(5.75)


def test_hand_written_store_without_experiment_json(tmp_path: Path) -> None:
    root = make_results(tmp_path / "r", samples=False)
    (root / "experiment.json").unlink()
    exp = load_experiment(root)
    assert [f.name for f in exp.factors] == ["deploy.transport", "app.payload"]
    assert any("experiment.json is missing" in n for n in exp.notes)


def test_numeric_levels_and_nulls(tmp_path: Path) -> None:
    root = make_results(
        tmp_path / "r",
        factors=[{"name": "load.rate", "letter": "A", "levels": [10, 100]}],
        p99={(10,): 1.0, (100,): 3.0}, failed_cell=None, samples=False)
    # Go writes no NaN: a missing percentile is null.
    s = next((root / "runs").glob("r001-*")) / "summary.json"
    data = json.loads(s.read_text())
    data["operations"][0]["latency"]["p999_ms"] = None
    s.write_text(json.dumps(data))
    exp = load_experiment(root)
    assert exp.factors[0].levels == ["10", "100"]
    t = response_table(exp)
    assert t["p999_ms"].isna().sum() == 1


def test_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(AnalysisError, match="no such results directory"):
        load_experiment(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AnalysisError, match="no runs"):
        load_experiment(tmp_path / "empty")
    root = make_results(tmp_path / "r", samples=False)
    with pytest.raises(AnalysisError, match="no operation 'GET /x'"):
        load_experiment(root, operation="GET /x")
    bad = next((root / "runs").glob("r001-*")) / "summary.json"
    bad.write_text("{not json")
    with pytest.raises(AnalysisError, match=r"summary\.json: not valid JSON"):
        load_experiment(root)
    shutil.rmtree(root)


def test_hdr_logs(tmp_path: Path) -> None:
    root = make_results(tmp_path / "r", samples=False, hlog=True, failed_cell=None)
    logs = sorted((root / "runs").glob("r*/latency.hlog"))
    assert len(logs) == 12
    qs = np.array([0.5, 0.99])
    # The first run is grpc/small, p99 1.9 ms: its histogram's median is p99/3.
    med = hdr_quantiles(logs[:1], "total", qs)
    assert med is not None
    assert med[0] == pytest.approx(1.9 / 3, rel=0.1)
    assert med[1] > med[0]
    # "GET /echo" is tagged GET_/echo in the log.
    assert hdr_quantiles(logs[:1], "GET /echo", qs) is not None
    assert hdr_quantiles(logs[:1], "absent", qs) is None
    assert hdr_quantiles([tmp_path / "none.hlog"], "total", qs) is None


def test_empty_operation_has_no_latency(tmp_path: Path) -> None:
    root = make_results(tmp_path / "r", samples=False, failed_cell=None)
    s = next((root / "runs").glob("r001-*")) / "summary.json"
    data = json.loads(s.read_text())
    op = data["operations"][1]
    op.update(count=0, errors=0, rps=0)
    op["latency"] = {k: 0 for k in op["latency"]}
    s.write_text(json.dumps(data))
    exp = load_experiment(root, operation="Echo")
    t = response_table(exp)
    assert t["p99_ms"].isna().sum() == 1


@pytest.mark.parametrize(("value", "want"), [
    (0.9999999, "1.00"), (1.0000001, "1.00"), (0.5, "0.500"), (9.99999, "10.0"),
    (12345.6, "12,346"), (-0.004, "−0.004"), (0.0, "0"), (float("nan"), "—"),
])
def test_num_bands_follow_the_printed_value(value: float, want: str) -> None:
    assert num(value) == want


@pytest.mark.parametrize("tie", [36.75, 18.75, 0.125, 2.5])
def test_num_prints_a_tie_alike_from_either_side(tie: float) -> None:
    # Two CPUs' BLAS kernels can land a hair either side of an exact tie.
    below, above = tie * (1 - 4e-16), tie * (1 + 4e-16)
    assert below < tie < above
    assert num(below) == num(tie) == num(above)
    assert num(below, 3) == num(above, 3)


def test_window_cpu_reads_the_counters_at_the_windows_edges() -> None:
    # Samples half a second off the window's edges, as a sampler ticking
    # from its own start took them: the window is 3 s at 0.1 CPU-s a second,
    # not the 4 s from the last sample before 0 to the last one after 3.
    t = np.array([-0.5, 0.5, 1.5, 2.5, 3.5])
    steady = pd.DataFrame({"process": "a", "pid": 1, "t_s": t, "cpu_s": 2.0 + 0.1 * t})
    assert window_cpu_seconds(steady, 3.0) == pytest.approx(0.3)
    # Started in the window (first sample at 0.5) and exited in it (last at
    # 2.5): counted between its own samples, nothing invented beyond them.
    short = pd.DataFrame({"process": "b", "pid": 2, "t_s": t[1:4], "cpu_s": [0.0, 0.4, 0.8]})
    assert window_cpu_seconds(short, 3.0) == pytest.approx(0.8)
    # Sampled only long after the window: not in it.
    late = pd.DataFrame({"process": "c", "pid": 3, "t_s": [5.0, 6.0], "cpu_s": [1.0, 2.0]})
    assert window_cpu_seconds(pd.concat([steady, late]), 3.0) == pytest.approx(0.3)
