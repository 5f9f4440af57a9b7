"""The kube deployer's note that pods have no resource samples: one line of
the report's warnings per experiment, not one per run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from stores import write_store
from test_report import section

from svclab_analysis.report import build_report
from svclab_analysis.report.analysis import analyse
from svclab_analysis.results import load_experiment

# internal/deploy/kube ResourceNote's text, as run.json carries it.
NOTE = ("resources: no CPU or memory samples of the pods in resources.parquet (CPU per "
        "request is not reported): the cluster serves no metrics API (metrics.k8s.io, e.g. "
        "metrics-server)")


def kube_store(root: Path, with_note: int) -> Path:
    """A 2-level, 3-repetition store whose first `with_note` runs are kube
    runs: the note in run.json, and resources.parquet with the svclab
    process's row only, as the runner writes it for a cluster's run."""
    d = write_store(root, "kube", [("deploy.transport", ["grpc", "http"])],
                    lambda lv, rep: {"total": {"p50_ms": 2.0 + rep / 10}}, reps=3)
    for i, rd in enumerate(sorted((d / "runs").iterdir())):
        run = json.loads((rd / "run.json").read_text())
        if i < with_note:
            run["warnings"] = [NOTE]
            pd.DataFrame({"t_s": [0.0], "process": ["loadgen"], "pid": [1], "cpu_s": [0.1],
                          "rss_bytes": [2**20]}).to_parquet(rd / "resources.parquet", index=False)
        if i == 0:
            run["warnings"].append("traces: none collected")
        (rd / "run.json").write_text(json.dumps(run))
    return d


def test_note_once_per_experiment(tmp_path: Path) -> None:
    build_report(kube_store(tmp_path, with_note=6))
    md = (tmp_path / "kube-20260102-030405" / "report.md").read_text()
    warnings = section(md, "Warnings")
    assert warnings.count("no CPU or memory samples of the pods") == 1
    assert f"{NOTE} (every run)" in warnings
    # Other run warnings stay per run.
    assert "run r001-" in warnings and ": traces: none collected" in warnings


def test_note_counts_the_runs_it_concerns(tmp_path: Path) -> None:
    # The analysis alone: the rendering is the test above's.
    a = analyse(load_experiment(kube_store(tmp_path, with_note=2)))
    assert [w for w in a.warnings if "resources" in w] == [f"{NOTE} (2 of 6 runs)"]
