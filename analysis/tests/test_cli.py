"""The standalone CLI on plain CSVs, with no svclab results around, and its
handling of bad input: one line naming the problem, exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli, run_cli_subprocess
from scipy import stats

from svclab_analysis.cli import main

JAIN_CSV = """A,B,y
a1,b1,15
a1,b1,18
a1,b1,12
a2,b1,45
a2,b1,48
a2,b1,51
a1,b2,25
a1,b2,28
a1,b2,19
a2,b2,75
a2,b2,75
a2,b2,81
"""


@pytest.fixture()
def jain(csv_dir: Path) -> Path:
    p = csv_dir / "data.csv"
    p.write_text(JAIN_CSV)
    return p


def test_allocate_json_shape_and_values(jain: Path) -> None:
    r = run_cli("allocate", str(jain), "--response", "y", "--factors", "A,B",
                "--confidence", "0.9", "--format", "json", cwd=jain.parent)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    terms = {t["term"]: t for t in out["terms"]}
    assert list(terms) == ["Intercept", "A", "B", "A:B", "Residual"]
    for t in out["terms"]:
        assert set(t) >= {"term", "effect", "ci_low", "ci_high", "sum_sq", "percent"}
    # Jain's Example 18.1/18.3, derived in test_design.py.
    assert terms["A"]["effect"] == pytest.approx(21.5)
    assert terms["A"]["percent"] == pytest.approx(78.88, abs=0.01)
    assert terms["A"]["ci_low"] == pytest.approx(19.583, abs=1e-3)
    assert terms["Residual"]["sum_sq"] == pytest.approx(102)
    assert terms["Residual"]["effect"] is None
    assert terms["Intercept"]["percent"] is None
    assert out["factors"] == [{"name": "A", "low": "a1", "high": "a2"},
                              {"name": "B", "low": "b1", "high": "b2"}]


def test_allocate_table_log_and_where(jain: Path) -> None:
    r = run_cli("allocate", str(jain), "-y", "y", "--factors", "A,B", "--log")
    assert r.returncode == 0, r.stderr
    assert "log(y)" in r.stdout and "A:B" in r.stdout and "ratio" in r.stdout
    r = run_cli("allocate", "-", "-y", "y", "--factors", "A", "--where", "B=b1",
                "--format", "json", stdin=JAIN_CSV)
    assert r.returncode == 0, r.stderr
    terms = {t["term"]: t for t in json.loads(r.stdout)["terms"]}
    assert terms["A"]["effect"] == pytest.approx((48 - 15) / 2)


def test_allocate_two_level_subset(csv_dir: Path) -> None:
    extra = "\n".join(f"a3,{b},{v}" for b, v in [("b1", 1), ("b1", 2), ("b2", 3), ("b2", 4)])
    p = csv_dir / "big.csv"
    p.write_text(JAIN_CSV + extra + "\n")
    r = run_cli("allocate", str(p), "-y", "y", "--factors", "A,B")
    assert r.returncode == 2 and "--levels A=" in r.stderr
    r = run_cli("allocate", str(p), "-y", "y", "--factors", "A,B", "--levels", "A=a1,a2",
                "--format", "json")
    assert r.returncode == 0, r.stderr
    terms = {t["term"]: t for t in json.loads(r.stdout)["terms"]}
    assert terms["A"]["effect"] == pytest.approx(21.5)


def test_compare_matches_scipy(jain: Path) -> None:
    r = run_cli("compare", str(jain), "--response", "y", "--group", "A", "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    pair = out["pairs"][0]
    a = [15, 18, 12, 25, 28, 19]
    b = [45, 48, 51, 75, 75, 81]
    ref = stats.mannwhitneyu(a, b, alternative="two-sided")
    assert pair["U"] == pytest.approx(ref.statistic)
    assert pair["p"] == pytest.approx(ref.pvalue)
    assert pair["rank_biserial"] == pytest.approx(-1.0)
    assert pair["ratio"] == pytest.approx(18.5 / 63)
    assert out["kruskal"] is None
    r = run_cli("compare", str(jain), "-y", "y", "--group", "A")
    assert r.returncode == 0 and "Mann-Whitney" in r.stdout


def test_samplesize_cli(csv_dir: Path) -> None:
    p = csv_dir / "pilot.csv"
    p.write_text("y\n" + "\n".join(["0.9", "1.1"] * 5) + "\n")
    r = run_cli("samplesize", str(p), "--response", "y", "--error", "5", "--confidence", "0.90",
                "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["required"] == 15  # derived in test_stats.py
    r = run_cli("samplesize", str(p), "-y", "y", "--confidence", "90")
    assert r.returncode == 0 and "15 values per group" in r.stdout


BAD = [
    (["allocate", "{csv}", "-y", "nope", "--factors", "A,B"], "no column 'nope'"),
    (["allocate", "{csv}", "-y", "y", "--factors", "A,Z"], "no column 'Z'"),
    (["allocate", "{one}", "-y", "y", "--factors", "A,B"], "factor 'B' has only one level"),
    (["allocate", "{text}", "-y", "y", "--factors", "A,B"], "not numeric"),
    (["compare", "{text}", "-y", "y", "--group", "A"], "not numeric"),
    (["compare", "{one}", "-y", "y", "--group", "B"], "only one level"),
    (["samplesize", "{text}", "-y", "y"], "not numeric"),
    (["allocate", "{missing}", "-y", "y", "--factors", "A"], "no such file"),
    (["allocate", "{empty}", "-y", "y", "--factors", "A"], "empty file"),
    (["allocate", "{csv}", "-y", "y", "--factors", "A,B", "--levels", "A=a1"],
     "exactly two levels"),
    (["report", "{emptydir}"], "no runs"),
    (["report", "{missing}"], "no such results directory"),
    (["report", "{noruns}"], "no run finished ok"),
    (["report", "{okdir}", "--metric", "p42_ms"], "unknown metric 'p42_ms'"),
    (["allocate", "{csv}", "-y", "y"], "--factors"),
]


def bad_inputs(csv_dir: Path, results_dir: Path) -> dict[str, str]:
    (csv_dir / "d.csv").write_text(JAIN_CSV)
    (csv_dir / "one.csv").write_text(JAIN_CSV.replace("b2", "b1"))
    (csv_dir / "text.csv").write_text(JAIN_CSV.replace("a1,b1,18", "a1,b1,fast"))
    (csv_dir / "empty.csv").write_text("")
    (csv_dir / "emptydir").mkdir()
    noruns = csv_dir / "noruns"
    (noruns / "runs" / "r001-x").mkdir(parents=True)
    (noruns / "runs" / "r001-x" / "run.json").write_text(json.dumps(
        {"id": "r001-x", "index": 1, "repetition": 1, "levels": {}, "status": "failed",
         "reason": "process g0 exited with status 1"}))
    paths = {"csv": csv_dir / "d.csv", "one": csv_dir / "one.csv", "text": csv_dir / "text.csv",
             "empty": csv_dir / "empty.csv", "missing": csv_dir / "absent",
             "emptydir": csv_dir / "emptydir", "noruns": noruns, "okdir": results_dir}
    return {k: str(v) for k, v in paths.items()}


@pytest.mark.parametrize(("args", "message"), BAD)
def test_bad_input_one_line_exit_2(args: list[str], message: str, csv_dir: Path,
                                   results_dir: Path, capsys: pytest.CaptureFixture[str]
                                   ) -> None:
    paths = bad_inputs(csv_dir, results_dir)
    try:
        code = main([a.format(**paths) for a in args])
    except SystemExit as exc:  # argparse itself rejects a missing option
        code = exc.code
    captured = capsys.readouterr()
    assert code == 2, (captured.out, captured.err)
    assert message in captured.err
    assert "Traceback" not in captured.err
    assert len(captured.err.strip().splitlines()) == 1, captured.err
    assert captured.out == ""


@pytest.mark.parametrize("index", [0, 12])
def test_bad_input_via_subprocess(index: int, csv_dir: Path, results_dir: Path) -> None:
    # The same cases through the installed console script: what a user sees.
    args, message = BAD[index]
    paths = bad_inputs(csv_dir, results_dir)
    r = run_cli_subprocess(*[a.format(**paths) for a in args])
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stdout == ""
