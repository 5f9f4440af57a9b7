from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from synth import make_results

from svclab_analysis.report import build_report


def cli_command() -> list[str]:
    script = Path(sys.executable).parent / "svclab-analysis"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "svclab_analysis"]


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cli_command(), *args], capture_output=True, text=True, cwd=cwd,
                          input=stdin, timeout=300)


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
