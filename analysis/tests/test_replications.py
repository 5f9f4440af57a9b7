"""Tests of the generator of docs/REPLICATIONS.md's tables.

Each test writes small results directories (stores.py) with per-run numbers
chosen so that the expected table entries can be computed here
independently (scipy's t quantile, plain numpy sums of squares) and then
looked for in the generated Markdown.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from stores import S3_P50, est_text, s0_values, s3_store, s4_values, write_store

from svclab_analysis import replications as rp
from svclab_analysis.errors import AnalysisError
from svclab_analysis.formatting import num


def test_s3_tables(tmp_path: Path) -> None:
    d = s3_store(tmp_path, bottleneck=lambda lv, rep: lv["app.size"] == "large" and rep == 2)
    text = rp.build_section(rp.STUDIES["s3"], d).text
    # Means with Student-t intervals over the five runs, for each cell.
    for cell in S3_P50:
        assert est_text(S3_P50[cell]) in text, cell
    # The paper's numbers are there, in ms.
    assert "| Go/gRPC | 0.710 (0.060) |" in text
    assert "7.68 (0.700)" in text and "4.47 (0.670)" in text
    assert "not run (no Java runs in these results)" in text
    # REST ÷ gRPC: ratio of the run medians, 2.4/1.2 = 2 at StdSize, 44/9 at LargeSize.
    assert "| StdSize | 4.55× | 2.00× (" in text
    assert f"| LargeSize | 0.582× | {num(44 / 9)}× (" in text
    assert "gRPC wins small requests | holds |" in text
    assert "REST wins large requests | does not hold (reversed) |" in text
    # Allocation of variation per size: SS of the transport over the total SS.
    for size, col in (("std", 2), ("large", 4)):
        g, h = np.array(S3_P50[("grpc", size)]), np.array(S3_P50[("http", size)])
        y = np.concatenate([g, h])
        ss_a = 5 * ((g.mean() - y.mean()) ** 2 + (h.mean() - y.mean()) ** 2)
        share = 100 * ss_a / ((y - y.mean()) ** 2).sum()
        row = next(ln for ln in text.splitlines() if ln.startswith("| communication style |"))
        assert [c.strip() for c in row.split("|")][col + 1] == num(share)
    # Two flagged large runs, reported per cell; CPU per request 0.5 s / 100 req/s = 5 ms.
    # Service time equals latency in this store; one run in five sent 5% late.
    svc = est_text(S3_P50[("grpc", "large")])
    assert f"| Go/gRPC | large | 5.00 (5.00–5.00) | {svc} | 12.5 | 1.00 | 7.50 | 1 of 5 |" in text
    assert "20 of 20 planned runs ok, 2 flagged by the generator's self-audit" in text


def test_provenance_uses_replicate_json(tmp_path: Path) -> None:
    d = s3_store(tmp_path, replicate={"command": "bin/svclab run experiments/s3-style.toml",
                                      "wall_s": 500.4, "loadavg_before": "0.10 0.20 0.30",
                                      "loadavg_after": "1.50 1.00 0.50",
                                      "loadavg_during": {"samples": 50, "mean_1m": 1.234,
                                                         "max_1m": 3.5}})
    text = rp.build_section(rp.STUDIES["s3"], d).text
    assert "Wall time: 8 min 20 s (measured by scripts/replicate.sh" in text
    assert "Load average: 0.10 0.20 0.30 before and 1.50 1.00 0.50 after (1, 5, 15 min); " \
        "1-min average while it ran: mean 1.23, max 3.50 (50 samples)." in text
    assert "Ran 2026-01-02 03:04 UTC" in text


def test_provenance_without_replicate_json(tmp_path: Path) -> None:
    text = rp.build_section(rp.STUDIES["s3"], s3_store(tmp_path)).text
    # Runs end at 03:04:06 .. 03:04:25 (run 20 ends at 03:04:25); start 03:04:05.
    assert "Wall time: 20 s (first run's start to last run's end" in text
    assert "Command: `bin/svclab run experiments/s3-style.toml`" in text
    meta = json.loads((tmp_path / "s3-style-20260102-030405" / "experiment.json").read_text())
    meta["overrides"] = ["load.rate=10", 'experiment.factors."app.size"=["std"]']
    (tmp_path / "s3-style-20260102-030405" / "experiment.json").write_text(json.dumps(meta))
    text = rp.build_section(rp.STUDIES["s3"], tmp_path / "s3-style-20260102-030405").text
    assert ("Command: `bin/svclab run --set load.rate=10 --set "
            "'experiment.factors.\"app.size\"=[\"std\"]' experiments/s3-style.toml`") in text


# ---------------------------------------------------------------- S4


def test_s4_tables(tmp_path: Path) -> None:
    d = write_store(tmp_path, "s4-rpc", [("deploy.transport", ["grpc", "netrpc"]),
                                         ("app.string_len", [2, 1024])], s4_values, reps=3)
    text = rp.build_section(rp.STUDIES["s4"], d).text
    # void is pooled over string_len: 6 runs a transport.
    void_g = [0.81, 0.82, 0.83] * 2
    void_n = [0.41, 0.42, 0.43] * 2
    row = next(ln for ln in text.splitlines() if ln.startswith("| void |"))
    assert est_text(void_g) in row and est_text(void_n) in row
    assert f"{num(0.82 / 0.42)}× (" in row and "| 6 / 6 |" in row
    # string is per length, 3 runs each: 0.8 + 1.024 + jitter for grpc.
    row = next(ln for ln in text.splitlines() if ln.startswith("| string, 1024 chars |"))
    assert est_text([1.834, 1.844, 1.854]) in row
    assert "| 3 / 3 |" in row
    assert "holds for every operation" in text
    assert "6.36–11.0× in the paper" in text
    # Jain: n = (100 t s / (5 mean))^2 for string, 2 chars, grpc.
    x = np.array([0.812, 0.822, 0.832])
    need = math.ceil((100 * stats.t.ppf(0.975, 2) * x.std(ddof=1) / (5 * x.mean())) ** 2)
    row = next(ln for ln in text.splitlines()
               if ln.startswith("| string, 2 chars | 3 | "))
    cells = [c.strip() for c in row.split("|")]
    assert cells[3:5] == [num(100 * x.std(ddof=1) / x.mean()), str(max(need, 2))]
    # string_len does not enter void: its ANOVA share is 0.
    assert "`void` < 0.01% (p = 1.000)" in text
    # string grows by 1.022 ms from 2 to 1024 characters: most of its variation.
    ss_len, ss_tr, ss_err = 12 * 0.511**2, 12 * 0.2**2, 4 * 0.0002
    assert f"`string` {num(100 * ss_len / (ss_len + ss_tr + ss_err))}% (p < 0.0001)" in text
    row = next(ln for ln in text.splitlines() if ln.startswith("| string, all lengths pooled |"))
    assert "| 6 / 6 |" in row


# ---------------------------------------------------------------- S2


def test_s2_tables(tmp_path: Path) -> None:
    def values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
        base = {"small": 2.0, "large": 10.0}[lv["app.payload"]]
        if lv["deploy.transport"] == "http":
            base *= 2
        if int(lv["load.rate"]) == 100 and lv["app.payload"] == "large":
            base *= 3  # slower at the higher rate: the paper's default was not
        return {"total": {"mean_ms": base + 0.1 * rep}}

    d = write_store(tmp_path, "s2-payload",
                    [("load.rate", [10, 100]), ("app.payload", ["small", "large"]),
                     ("deploy.transport", ["grpc", "http"])], values, reps=5)
    text = rp.build_section(rp.STUDIES["s2"], d).text
    row = next(ln for ln in text.splitlines() if ln.startswith("| 10 req/s, small |"))
    assert row.startswith("| 10 req/s, small | 11.7 | ")
    assert est_text([2.1, 2.2, 2.3, 2.4, 2.5]) + ", 5 runs" in row
    assert est_text([4.1, 4.2, 4.3, 4.4, 4.5]) + ", 5 runs" in row
    assert row.endswith("| 12.6 | 11.9 |")
    assert "| large ÷ small | grpc, 10 req/s | 1.99× | " in text
    lines = [ln for ln in text.splitlines() if ln.startswith("| 100 ÷ 10 req/s |")]
    small = next(ln for ln in lines if "grpc, small" in ln)
    large = next(ln for ln in lines if "grpc, large" in ln)
    assert small.endswith("| holds |")
    assert large.endswith("does not hold (slower at the higher rate) |")
    assert f"| 0.781× | {num(30.3 / 10.3)}× (" in large
    # The 2^3 r allocation sums to 100% and names every term.
    shares = []
    for ln in text.splitlines():
        if ln.startswith(("| load.", "| app.", "| deploy.", "| error (between runs)")):
            shares.append(float(ln.rstrip(" |").rsplit("| ", 1)[1]))
    assert len(shares) == 8
    assert sum(shares) == pytest.approx(100, abs=0.2)


# ---------------------------------------------------------------- S0


def test_s0_tables(tmp_path: Path) -> None:
    d = write_store(tmp_path, "s0-granularity",
                    [("deploy.placement", ["monolith", "two", "split"]),
                     ("load.users", [10, 100])], s0_values, reps=3)
    text = rp.build_section(rp.STUDIES["s0"], d).text
    row = next(ln for ln in text.splitlines() if ln.startswith("| split |"))
    assert "(d) every service its own process: 8.00 → 68.0" in row
    assert est_text([24.0 * (1 + 0.02 * r) for r in (1, 2, 3)]) in row
    # split ÷ monolith: 6/2.1 at 10 users, 24/3 at 100 users (ratios of medians).
    row = next(ln for ln in text.splitlines() if ln.startswith("| split ÷ monolith |"))
    assert f"| {num(6.0 / 2.1)}× (" in row and f"| {num(24.0 / 3.0)}× (" in row
    # split − monolith at 100 users, with Welch's interval.
    a = np.array([24.0 * (1 + 0.02 * r) for r in (1, 2, 3)])
    b = np.array([3.0 * (1 + 0.02 * r) for r in (1, 2, 3)])
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval()
    row = next(ln for ln in text.splitlines() if ln.startswith("| split − monolith (ms) |"))
    assert row.endswith(f"| {num(a.mean() - b.mean())} ({num(ci.low)}–{num(ci.high)}) |")
    assert f"; median {num(24.0 * 1.04)} |" in text
    # split ÷ monolith is 6/2.1 = 2.86× at 10 users: more than the paper's 1.33×.
    assert "*fine granularity costs little at low load* (split ÷ monolith at 10 users no " \
        "larger than the paper's 1.33×): **does not hold (larger)**" in text
    assert "intervals not overlapping): **holds**." in text
    # System CPU: 0.5 CPU-s per second is 50% of one core; 5 ms per request at 100 req/s.
    assert "| monolith | 10 | 100 (100–100) | 5.00 (5.00–5.00) | 50.0 | 12.5 | 0 of 3 |" in text


def test_s0_tables_keep_to_grpc(tmp_path: Path) -> None:
    # With deploy.transport a factor, the paper's placement comparison uses
    # grpc's runs only: protorpc's, ten times faster here, must not be pooled in.
    def values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
        v = s0_values(lv, rep)
        if lv["deploy.transport"] == "protorpc":
            v["total"]["p95_ms"] /= 10
        return v

    d = write_store(tmp_path, "s0-granularity",
                    [("deploy.placement", ["monolith", "two", "split"]),
                     ("load.users", [10, 100]),
                     ("deploy.transport", ["grpc", "protorpc"])], values, reps=3)
    text = rp.build_section(rp.STUDIES["s0"], d).text
    row = next(ln for ln in text.splitlines() if ln.startswith("| split |"))
    assert est_text([24.0 * (1 + 0.02 * r) for r in (1, 2, 3)]) in row


# ---------------------------------------------------------------- the document


DOC = """# Replications

Prose before.

<!-- BEGIN s3 -->
old s3 table
<!-- END s3 -->

Prose between.

<!-- BEGIN s4 -->
old s4 table
<!-- END s4 -->

Prose after.
"""


def test_rewrite_replaces_only_regions() -> None:
    new = rp.rewrite(DOC, {"s3": "new table\nline 2\n"})
    assert "<!-- BEGIN s3 -->\nnew table\nline 2\n<!-- END s3 -->" in new
    assert "old s4 table" in new
    assert new.replace("new table\nline 2\n", "old s3 table\n") == DOC
    # Idempotent.
    assert rp.rewrite(new, {"s3": "new table\nline 2"}) == new


def test_rewrite_needs_exactly_one_region() -> None:
    with pytest.raises(AnalysisError, match="found 0"):
        rp.rewrite(DOC, {"s0": "x"})
    with pytest.raises(AnalysisError, match="found 2"):
        rp.rewrite(DOC + "<!-- BEGIN s4 -->\nx\n<!-- END s4 -->\n", {"s4": "x"})


def test_latest_results(tmp_path: Path) -> None:
    s3_store(tmp_path, stamp="20260101-000000")
    newest = s3_store(tmp_path, stamp="20260301-000000")
    s3_store(tmp_path, stamp="20260201-000000")
    (tmp_path / "s3-style-20270101-000000").mkdir()  # no experiment.json: not a result
    write_store(tmp_path, "s3-style-x", [("deploy.transport", ["grpc", "http"])],
                lambda lv, rep: {"total": {"p50_ms": 1.0}}, reps=2, stamp="20280101-000000")
    assert rp.latest_results(tmp_path, "s3-style") == newest
    assert rp.latest_results(tmp_path, "s4-rpc") is None
    assert rp.latest_results(tmp_path / "missing", "s3-style") is None


def test_cli_rewrites_the_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    s3_store(results)
    doc = tmp_path / "REPLICATIONS.md"
    doc.write_text(DOC)
    assert rp.main(["--results", str(results), "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert "old s3 table" not in text
    assert est_text(S3_P50[("http", "large")]) in text
    # s4 has no results: its region is left as it was.
    assert "<!-- BEGIN s4 -->\nold s4 table\n<!-- END s4 -->" in text
    assert "s4: no results of s4-rpc" in capsys.readouterr().err
    assert text.startswith("# Replications\n\nProse before.\n")


def test_cli_explicit_dir_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = s3_store(tmp_path / "elsewhere")
    assert rp.main(["--results", str(tmp_path / "none"), "--only", "s3", "--stdout",
                    f"s3={d}"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("<!-- BEGIN s3 -->\n<!-- generated by")
    assert rp.main(["s9=x"]) == 2
    assert "expected KEY=DIR" in capsys.readouterr().err
    assert rp.main(["--only", "s7"]) == 2
    assert rp.main(["--results", str(tmp_path / "elsewhere"), "--only", "s3",
                    "--doc", str(tmp_path / "missing.md")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_verdict() -> None:
    assert rp.verdict(1.2, 3.0, True) == "holds"
    assert rp.verdict(0.2, 0.9, True) == "does not hold (reversed)"
    assert rp.verdict(0.9, 1.1, True).startswith("inconclusive")
    assert rp.verdict(0.2, 0.9, False) == "holds"
    assert rp.verdict(math.nan, 1.0, False).startswith("inconclusive")


def test_one_run_per_cell_gives_ratios_without_intervals(tmp_path: Path) -> None:
    def values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
        return {"total": {"p50_ms": S3_P50[(lv["deploy.transport"], lv["app.size"])][0]}}

    d = write_store(tmp_path, "s3-style", [("deploy.transport", ["grpc", "http"]),
                                           ("app.size", ["std", "large"])], values, reps=1)
    text = rp.build_section(rp.STUDIES["s3"], d).text
    assert ("| StdSize | 4.55× | 2.00× | — | gRPC wins small requests "
            "| inconclusive (no interval) |") in text


def test_summary_region(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    s3_store(results)
    closed_dir = s3_store(results, name="s3-style-closed",
                          spec={"load": {"mode": "closed", "users": 1}})
    write_store(results, "s4-rpc", [("deploy.transport", ["grpc", "netrpc"]),
                                    ("app.string_len", [2, 1024])], s4_values, reps=3)
    write_store(results, "s2-payload",
                [("load.rate", [10, 100]), ("app.payload", ["small", "large"]),
                 ("deploy.transport", ["grpc", "http"])],
                lambda lv, rep: {"total": {"mean_ms": {"small": 2.0, "large": 10.0}[
                    lv["app.payload"]] + 0.1 * rep}}, reps=3)
    write_store(results, "s0-granularity", [("deploy.placement", ["monolith", "two", "split"]),
                                            ("load.users", [10, 100])], s0_values, reps=3)
    doc = tmp_path / "R.md"
    doc.write_text("".join(f"<!-- BEGIN {k} -->\n<!-- END {k} -->\n"
                           for k in [*rp.STUDIES, "summary", "runs"]))
    # One study alone: the summary is still rebuilt from the newest results of all.
    assert rp.main(["--results", str(results), "--doc", str(doc), "--only",
                    "s0,summary,runs"]) == 0
    text = doc.read_text()
    runs = text.split("<!-- BEGIN runs -->")[1].split("<!-- END runs -->")[0]
    assert "| s3 | [s3-style.toml](../experiments/s3-style.toml) | `s3-style-20260102-030405` " \
        "| 20 of 20 | 0 | — | 20 s (first run's start" in runs
    assert "| s4 | [s4-rpc.toml](../experiments/s4-rpc.toml) | `s4-rpc-20260102-030405` " \
        "| 12 of 12 |" in runs
    assert "<!-- BEGIN s3 -->\n<!-- END s3 -->" in text
    summary = text.split("<!-- BEGIN summary -->")[1]
    rows = [ln for ln in summary.splitlines() if ln.startswith("| S")]
    assert "| S3 | gRPC wins small requests (open loop) | **holds** | REST ÷ gRPC 2.00× (" \
        in rows[0]
    assert any("REST wins large requests (back-to-back calls) | **does not hold (reversed)**"
               in r for r in rows)
    closed = rp.build_section(rp.STUDIES["s3c"], closed_dir).text
    assert "| n/a (closed loop) | n/a (closed loop) |" in closed
    assert any(r.startswith("| S4 | net/rpc is faster than gRPC on one machine | **holds "
                            "for every operation** | grpc ÷ netrpc") for r in rows)
    assert any(r.startswith("| S2 | a large payload costs more than a small one | **holds** |")
               for r in rows)
    # In this store 100 req/s is never slower: the claim holds in every cell.
    assert any(r.startswith("| S2 | the default setup is no slower at 100 than at 10 req/s "
                            "| **holds** | 100 ÷ 10 req/s 1.00–1.00×") for r in rows)
    assert any(r.startswith("| S0 | fine granularity costs little at low load | **does not "
                            "hold (larger)** | split ÷ monolith p95") for r in rows)
    assert any(r.startswith("| S0 | granularity's cost grows to dominate at high load | "
                            "**holds** |") for r in rows)
    # Without every study's results, the summary is left alone.
    for d in results.glob("s4-rpc-*"):
        (d / "experiment.json").unlink()
    doc.write_text(text.replace(summary.split("<!-- END summary -->")[0], "\nkept\n"))
    assert rp.main(["--results", str(results), "--doc", str(doc)]) == 0
    assert "<!-- BEGIN summary -->\nkept\n<!-- END summary -->" in doc.read_text()


def test_operation_without_answers_is_left_out_with_a_note(tmp_path: Path) -> None:
    # One run's movie operation got no answer in its window (count 0, as the
    # generator writes it): that run leaves movie's cell, the others stay,
    # and the region says which run and why.
    d = write_store(tmp_path, "s4-rpc", [("deploy.transport", ["grpc", "netrpc"]),
                                         ("app.string_len", [2, 1024])], s4_values, reps=3)
    s = next((d / "runs").glob("r001-*")) / "summary.json"
    data = json.loads(s.read_text())
    op = next(o for o in data["operations"] if o["name"] == "movie")
    op.update(count=0, errors=0, rps=0)
    op["latency"] = {k: 0 for k in op["latency"]}
    s.write_text(json.dumps(data))
    text = rp.build_section(rp.STUDIES["s4"], d).text
    row = next(ln for ln in text.splitlines() if ln.startswith("| movie |"))
    # r001 is grpc at 2 chars, repetition 1: grpc keeps the other 5 runs.
    assert est_text([0.92, 0.93, 0.91, 0.92, 0.93]) in row
    assert "| 5 / 6 |" in row
    assert "r001-" in text and "no answer" in text
    void = next(ln for ln in text.splitlines() if ln.startswith("| void |"))
    assert "| 6 / 6 |" in void
