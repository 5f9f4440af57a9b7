from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from synth import make_results

from svclab_analysis.cli import main
from svclab_analysis.report import build_report


def cli_command() -> list[str]:
    script = Path(sys.executable).parent / "svclab-analysis"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "svclab_analysis"]


def run_cli_subprocess(*args: str) -> subprocess.CompletedProcess[str]:
    """Runs the installed console script: what a user sees, exit status included."""
    return subprocess.run([*cli_command(), *args], capture_output=True, text=True, timeout=300)


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    """Runs the CLI's main in this process and returns what a subprocess would.

    Each interpreter start imports pandas, scipy and statsmodels again, 1–2 s of
    CPU per call; run_cli_subprocess covers the console script itself.
    """
    out, err = io.StringIO(), io.StringIO()
    old_cwd, old_stdin = os.getcwd(), sys.stdin
    try:
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin = io.StringIO(stdin or "")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse exits on bad usage
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(old_cwd)
        sys.stdin = old_stdin
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_results(tmp_path_factory.mktemp("store") / "synthetic-20260102-030405")


@pytest.fixture(scope="session")
def report_dir(results_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    build_report(results_dir, out=out)
    return out


@pytest.fixture()
def csv_dir(tmp_path: Path) -> Path:
    """A directory with nothing of svclab in it: the CLI must work on plain CSVs."""
    d = tmp_path / "plain"
    d.mkdir()
    return d


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
