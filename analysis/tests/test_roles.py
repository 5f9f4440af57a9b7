"""CPU per request by role: the hosts, the proxies and the telemetry
backends of resources.parquet, in the report and apart from the system's
CPU. Expected values are worked by hand from the rows written here."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from synth import make_results

from svclab_analysis.report import build_report
from svclab_analysis.report.analysis import CONFIG, analyse, config_labels
from svclab_analysis.results import load_experiment, load_role_cpu

FACTORS = [{"name": "deploy.sidecar", "levels": ["none", "envoy"]}]


def write_roles(root: Path, system: str = "host") -> None:
    """Every ok run serves 1000 requests in its 10 s window (synth). Its
    k-th repetition's host uses 2.0 + 0.1·k CPU-s in the window, an Envoy
    beside it 1.5 (with deploy.sidecar = envoy), Jaeger 0.5 and the load
    generator 3.0; each also used 1 CPU-s before the window. With system
    "external", the host is an external deployer's process instead, with
    no Envoy beside it."""
    seen: dict[str, int] = {}
    for d in sorted((root / "runs").iterdir()):
        if d.name.startswith(".tmp-"):
            continue
        run = json.loads((d / "run.json").read_text())
        if run["status"] != "ok":
            continue
        sidecar = run["levels"]["deploy.sidecar"]
        k = seen.get(sidecar, 0)
        seen[sidecar] = k + 1
        used = {("hop1", system): 2.0 + 0.1 * k, ("telemetry.jaeger", "telemetry"): 0.5,
                ("loadgen", "loadgen"): 3.0}
        if sidecar == "envoy" and system == "host":
            used[("hop1.envoy", "sidecar")] = 1.5
        rows = []
        for pid, ((proc, role), cpu) in enumerate(used.items(), start=100):
            for t, c in [(-1.0, 0.5), (0.0, 1.0), (5.0, 1.0 + cpu / 2), (10.0, 1.0 + cpu)]:
                rows.append({"t_s": t, "process": proc, "role": role, "pid": pid, "cpu_s": c,
                             "rss_bytes": 64 * 2**20})
        pd.DataFrame(rows).to_parquet(d / "resources.parquet", index=False)


def test_cpu_per_request_by_role(tmp_path: Path) -> None:
    root = make_results(tmp_path / "mesh", factors=FACTORS,
                        p99={("none",): 2.0, ("envoy",): 3.0}, failed_cell=None)
    write_roles(root)
    exp = load_experiment(root)
    rc = load_role_cpu(exp)
    assert set(rc["role"]) == {"host", "sidecar", "telemetry"}  # no loadgen
    a = analyse(exp)
    none, envoy = config_labels(pd.DataFrame({"deploy.sidecar": ["none", "envoy"]}),
                                exp.factor_names).tolist()
    s = a.role_cpu.set_index([CONFIG, "role"])
    # The median of 2.0, 2.1 and 2.2 CPU-s over 1000 requests.
    assert s.loc[(none, "host"), "cpu_ms"] == pytest.approx(2.1)
    assert s.loc[(envoy, "host"), "cpu_ms"] == pytest.approx(2.1)
    assert s.loc[(envoy, "sidecar"), "cpu_ms"] == pytest.approx(1.5)
    assert s.loc[(none, "telemetry"), "cpu_ms"] == pytest.approx(0.5)
    assert (none, "sidecar") not in s.index
    assert s.loc[(envoy, "sidecar"), "runs"] == 3
    assert list(dict.fromkeys(a.role_cpu["role"])) == ["host", "sidecar", "telemetry"]
    # The system's CPU is the hosts' and the proxies', not the backends'.
    per_1k = a.table.groupby(CONFIG)["cpu_s_per_1k"].median()
    assert per_1k[none] == pytest.approx(2.1)
    assert per_1k[envoy] == pytest.approx(3.6)

    build_report(root)
    md = (root / "report.md").read_text()
    assert "### CPU per request, by role (ms)" in md
    assert "| sidecar | hosts | sidecars | telemetry backends | runs |" in md
    assert "| envoy | 2.10 | 1.50 | 0.500 | 3 |" in md
    assert "| none | 2.10 | — | 0.500 | 3 |" in md
    assert "The columns hosts and sidecars are the system under test; telemetry backends " in md
    assert "](figures/roles.png)" in md
    assert (root / "figures" / "roles.png").stat().st_size > 1000


def test_external_role_caption(tmp_path: Path) -> None:
    # The external deployer's processes are the system under test: the
    # caption names their column, not svclab's hosts and proxies.
    root = make_results(tmp_path / "ext", factors=FACTORS,
                        p99={("none",): 2.0, ("envoy",): 3.0}, failed_cell=None)
    write_roles(root, system="external")
    build_report(root)
    md = (root / "report.md").read_text()
    assert "| sidecar | telemetry backends | external | runs |" in md
    assert "The column external is the system under test; telemetry backends are " in md
    assert "hosts" not in md.split("CPU per request, by role (ms)")[1].split("###")[0]
    assert "](figures/roles.png)" in md
    assert (root / "figures" / "roles.png").stat().st_size > 1000


def test_no_roles_no_table(tmp_path: Path) -> None:
    # Stores written before the role column: neither table nor figure.
    root = make_results(tmp_path / "old", factors=FACTORS,
                        p99={("none",): 2.0, ("envoy",): 3.0}, failed_cell=None)
    build_report(root)
    assert "by role" not in (root / "report.md").read_text()
    assert not (root / "figures" / "roles.png").exists()


def test_memory_by_role_is_pss(tmp_path: Path) -> None:
    """Two hosts that each map a 40 MiB binary and hold 6 MiB of their own:
    RSS counts the binary in each (46 + 46), PSS once in both (26 + 26), and
    the report's memory table gives the PSS sum, 52 MiB, not 92."""
    root = make_results(tmp_path / "mem", factors=FACTORS,
                        p99={("none",): 2.0, ("envoy",): 3.0}, failed_cell=None)
    for d in sorted((root / "runs").iterdir()):
        if d.name.startswith(".tmp-") or json.loads((d / "run.json").read_text())["status"] != "ok":
            continue
        rows = [{"t_s": t, "process": proc, "role": "host", "pid": pid, "cpu_s": 1.0 + t / 10,
                 "rss_bytes": 46 * 2**20, "pss_bytes": 26 * 2**20}
                for t in (0.0, 5.0, 10.0) for pid, proc in ((100, "a"), (101, "b"))]
        pd.DataFrame(rows).to_parquet(d / "resources.parquet", index=False)
    a = analyse(load_experiment(root))
    host = a.role_cpu[a.role_cpu["role"] == "host"]
    assert host["rss_mb"].tolist() == [92.0, 92.0]
    assert host["pss_mb"].tolist() == [52.0, 52.0]
    build_report(root)
    md = (root / "report.md").read_text()
    assert "### Memory, by role (MiB)" in md
    assert "| none | 52.0 | 2 |" in md


def test_no_memory_table_without_pss(tmp_path: Path) -> None:
    """Stores written before pss_bytes keep their report as it was."""
    root = make_results(tmp_path / "mesh", factors=FACTORS,
                        p99={("none",): 2.0, ("envoy",): 3.0}, failed_cell=None)
    write_roles(root)
    a = analyse(load_experiment(root))
    assert a.role_cpu["pss_mb"].isna().all()
    build_report(root)
    assert "Memory, by role" not in (root / "report.md").read_text()
