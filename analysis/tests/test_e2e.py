"""The report on a store that the real `svclab run` wrote (SVCLAB_BIN)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from scipy import stats

from svclab_analysis.formatting import num
from svclab_analysis.report import build_report

BIN = os.environ.get("SVCLAB_BIN", "")
SPEC = Path(__file__).resolve().parents[2] / "experiments" / "quickstart.toml"
pytestmark = pytest.mark.skipif(
    not (BIN and Path(BIN).is_file() and SPEC.is_file()),
    reason="needs SVCLAB_BIN (the Makefile's test-py sets it) and experiments/quickstart.toml")


def test_report_on_real_store(tmp_path: Path) -> None:
    r = subprocess.run(
        [BIN, "run", "--no-report", "--results", str(tmp_path / "results"),
         "--set", "experiment.repetitions=2", "--set", "load.duration=1s",
         "--set", "load.warmup=500ms", str(SPEC)],
        capture_output=True, text=True, timeout=600, cwd=SPEC.parents[1])
    assert r.returncode == 0, r.stderr[-3000:]
    (store,) = (tmp_path / "results").iterdir()
    path = build_report(store)
    md = (store / "report.md").read_text()
    for title in ("The answer", "Design and environment", "Per-metric tables", "Plots",
                  "Pairwise comparisons", "Warnings", "Methods"):
        assert f"\n## {title}\n" in md
    assert path.exists() and (store / "figures" / "box.png").exists()
    # The answer table's centres are the geometric means of the runs'
    # summary.json values of the experiment's headline metric (a latency,
    # positive in every run: the log-scale rule of stats.run_interval).
    metric = json.loads((store / "experiment.json").read_text())["response"]["metric"]
    by_cfg: dict[tuple[str, str], list[float]] = {}
    for run in (store / "runs").iterdir():
        meta = json.loads((run / "run.json").read_text())
        if meta["status"] != "ok":
            continue
        summary = json.loads((run / "summary.json").read_text())
        total = next(o for o in summary["operations"] if o["kind"] == "total")
        key = (str(meta["levels"]["deploy.placement"]), str(meta["levels"]["deploy.transport"]))
        by_cfg.setdefault(key, []).append(total["latency"][metric])
    assert by_cfg
    answer = md[md.index("## The answer"): md.index("## Design and environment")]
    for (placement, transport), values in by_cfg.items():
        assert f"| {placement} | {transport} | {num(stats.gmean(values))} |" in answer
