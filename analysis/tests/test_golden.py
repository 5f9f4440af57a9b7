"""Byte-for-byte comparison of the generated documents with golden copies.

The golden files in tests/golden/ were written by the analysis code before
replications.py and report.py were split by job, from the synthetic stores
built here. A refactor that changes a single character of a generated
region of docs/REPLICATIONS.md, or of a report, fails these tests.

After a deliberate change to what the documents say, rewrite the golden
files and review their diff:

    cd analysis && ../.venv/bin/python tests/test_golden.py
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from stores import S3_P50, s0_values, s3_store, s4_values, write_store
from synth import make_results

from svclab_analysis import replications as rp
from svclab_analysis.report import build_report

GOLDEN = Path(__file__).parent / "golden"


def s2_values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
    base = {"small": 2.0, "large": 10.0}[str(lv["app.payload"])]
    if lv.get("deploy.transport") == "http":
        base *= 2
    if int(lv.get("load.rate", 10)) == 100 and lv["app.payload"] == "large":
        base *= 3
    return {"total": {"mean_ms": base + 0.1 * rep}}


def full_stores(root: Path) -> None:
    """Every study with replicated factorial designs, flags and replicate.json."""
    s3_store(root, bottleneck=lambda lv, rep: lv["app.size"] == "large" and rep == 2,
             replicate={"command": "bin/svclab run experiments/s3-style.toml",
                        "wall_s": 500.4, "loadavg_before": "0.10 0.20 0.30",
                        "loadavg_after": "1.50 1.00 0.50",
                        "loadavg_during": {"samples": 50, "mean_1m": 1.234, "max_1m": 3.5}})
    s3_store(root, name="s3-style-closed", spec={"load": {"mode": "closed", "users": 1}})
    write_store(root, "s4-rpc", [("deploy.transport", ["grpc", "netrpc"]),
                                 ("app.string_len", [2, 1024])], s4_values, reps=3)
    write_store(root, "s2-payload", [("load.rate", [10, 100]), ("app.payload", ["small", "large"]),
                                     ("deploy.transport", ["grpc", "http"])], s2_values, reps=3)
    write_store(root, "s0-granularity", [("deploy.placement", ["monolith", "two", "split"]),
                                         ("load.users", [10, 100]),
                                         ("deploy.transport", ["grpc", "protorpc"])],
                s0_values, reps=2, bottleneck=lambda lv, rep: rep == 2)


def sparse_stores(root: Path) -> None:
    """The edges: one run per cell, one-level factors, no monolith."""
    s3 = [("deploy.transport", ["grpc", "http"]), ("app.size", ["std", "large"])]

    def s3_values(lv: dict[str, Any], rep: int) -> dict[str, dict[str, float]]:
        return {"total": {"p50_ms": S3_P50[(lv["deploy.transport"], lv["app.size"])][0]}}

    write_store(root, "s3-style", s3, s3_values, reps=1)
    write_store(root, "s3-style-closed", s3, s3_values, reps=1,
                spec={"load": {"mode": "closed", "users": 1}})
    write_store(root, "s4-rpc", [("deploy.transport", ["grpc", "netrpc"])],
                lambda lv, rep: s4_values({**lv, "app.string_len": 16}, rep), reps=2)
    # The s2 and s0 tables select cells by every key they vary, so a key
    # that takes one value is still a (one-level) factor here.
    write_store(root, "s2-payload", [("load.rate", [10]), ("app.payload", ["small", "large"]),
                                     ("deploy.transport", ["grpc"])], s2_values, reps=1)
    write_store(root, "s0-granularity", [("deploy.placement", ["two", "split"]),
                                         ("load.users", [10])], s0_values, reps=2)


def regions(build: Callable[[Path], None]) -> str:
    """Every generated region of docs/REPLICATIONS.md, as --stdout prints them."""
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp))
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert rp.main(["--results", tmp, "--stdout"]) == 0
        return out.getvalue()


def factorial_store(root: Path) -> Path:
    return make_results(root / "synthetic-20260102-030405")


def anova_store(root: Path) -> Path:
    factors = [{"name": "mesh.setup", "letter": "A", "levels": ["default", "obs", "mtls"]},
               {"name": "load.rate", "letter": "B", "levels": [10, 50, 100]}]
    p99 = {(s, r): b + r / 20 for s, b in (("default", 11.7), ("obs", 12.6), ("mtls", 11.9))
           for r in (10, 50, 100)}
    return make_results(root / "anova-20260102-030405", factors=factors, p99=p99,
                        failed_cell=None, bottleneck_run=None, samples=False)


@functools.cache  # the HTML and Markdown cases share one build
def report(make: Callable[[Path], Path], **kw: Any) -> tuple[str, str]:
    """report.md and report.html, with the inlined images and the store's path masked."""
    with tempfile.TemporaryDirectory() as tmp:
        root = make(Path(tmp))
        page = build_report(root, out=Path(tmp) / "out", **kw)
        md = (page.parent / "report.md").read_text(encoding="utf-8")
        html = page.read_text(encoding="utf-8")
    # The PNGs' bytes depend on matplotlib's version, not on the analysis.
    html = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "data:image/png;base64,…", html)
    return md.replace(tmp, "<tmp>"), html.replace(tmp, "<tmp>")


CASES: dict[str, Callable[[], str]] = {
    "replications-full.md": lambda: regions(full_stores),
    "replications-sparse.md": lambda: regions(sparse_stores),
    "report-factorial.md": lambda: report(factorial_store)[0],
    "report-factorial.html": lambda: report(factorial_store)[1],
    "report-log.md": lambda: report(factorial_store, log=True)[0],
    "report-anova.md": lambda: report(anova_store, operation="Echo")[0],
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_golden(name: str) -> None:
    want = (GOLDEN / name).read_text(encoding="utf-8")
    got = CASES[name]()
    assert got == want, f"{name} differs from tests/golden/{name}"


if __name__ == "__main__":
    GOLDEN.mkdir(exist_ok=True)
    for name, make in CASES.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        (GOLDEN / name).write_text(make(), encoding="utf-8")
        print(f"wrote {GOLDEN / name}")
