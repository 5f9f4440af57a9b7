"""Run warnings: run.json's {"kind", "text"} objects, and the plain strings of
results written before warnings had kinds, read alike."""

from __future__ import annotations

import json
from pathlib import Path

from stores import write_store

from svclab_analysis.report import build_report
from svclab_analysis.results import RunWarning, load_experiment, run_warning, warning_kind

# Old-form warnings and their kinds; internal/warn's Go test reads the same
# file, so both languages derive the same kind from an old string.
LEGACY = Path(__file__).resolve().parents[2] / "internal" / "warn" / "testdata" / "legacy.json"


def legacy() -> list[dict[str, str]]:
    cases: list[dict[str, str]] = json.loads(LEGACY.read_text())
    return cases


def test_kind_of_an_old_string() -> None:
    cases = legacy()
    assert len(cases) > 10
    for c in cases:
        assert warning_kind(c["text"]) == c["kind"], c["text"]


def test_run_warning_forms() -> None:
    text = "saturated: completed 18.7 req/s of 200.0 offered"
    assert run_warning(text) == RunWarning("saturated", text)
    assert run_warning({"kind": "saturated", "text": text}) == RunWarning("saturated", text)
    # The kind written is the kind read, whatever the text starts with.
    got = run_warning({"kind": "stalled", "text": "no prefix"})
    assert got == RunWarning("stalled", "no prefix")


def store(root: Path, typed: bool) -> Path:
    """A 2-level, 3-repetition store whose runs carry the legacy cases'
    warnings, four to a run: as strings, or as svclab writes them now."""
    d = write_store(root, "warn", [("deploy.transport", ["grpc", "http"])],
                    lambda lv, rep: {"total": {"p50_ms": 2.0 + rep / 10}}, reps=3)
    cases = legacy()
    for i, rd in enumerate(sorted((d / "runs").iterdir())):
        run = json.loads((rd / "run.json").read_text())
        mine = cases[4 * i: 4 * i + 4]
        run["warnings"] = mine if typed else [c["text"] for c in mine]
        (rd / "run.json").write_text(json.dumps(run))
    return d


def test_old_and_new_run_json_read_alike(tmp_path: Path) -> None:
    old = load_experiment(store(tmp_path / "old", typed=False))
    new = load_experiment(store(tmp_path / "new", typed=True))
    old_w = list(old.runs.sort_values("run_id")["warnings"])
    new_w = list(new.runs.sort_values("run_id")["warnings"])
    assert old_w == new_w
    assert [w.kind for ws in new_w for w in ws] == [c["kind"] for c in legacy()]
    # The run with a generator_bottleneck warning is flagged by its kind.
    flagged = new.runs[new.runs["bottleneck"]]
    assert len(flagged) == 1 and flagged.iloc[0]["warnings"][0].kind == "generator_bottleneck"


def test_old_and_new_report_alike(tmp_path: Path) -> None:
    reports = []
    for form in ("old", "new"):
        d = store(tmp_path / form, typed=form == "new")
        build_report(d)
        reports.append((d / "report.md").read_text().replace(str(tmp_path / form), "ROOT"))
    assert reports[0] == reports[1]
    # The kube note is matched by its kind: one line for the experiment.
    assert reports[1].count("no CPU or memory samples of the pods") == 1
    assert "metrics-server) (1 of 6 runs)" in reports[1]
