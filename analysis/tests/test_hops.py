"""The per-hop breakdown from hops.parquet (deploy.tracing) in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from synth import make_results

from svclab_analysis.report import build_report
from svclab_analysis.report.analysis import CONFIG, config_labels
from svclab_analysis.report.figures import hop_summary
from svclab_analysis.results import load_experiment, load_hops

FACTORS = [{"name": "deploy.transport", "levels": ["grpc", "http"]}]


def write_hops(root: Path, wire_us: dict[str, float]) -> None:
    """Three requests per ok run through hop1 → hop2: hop2's own time is 100,
    200, 600 µs (median 200), hop1's 50 µs; the wire to hop2 is the
    transport's wire_us plus 0, 10, 20 µs (median +10)."""
    for d in sorted((root / "runs").iterdir()):
        if d.name.startswith(".tmp-"):  # an uncommitted run, as a crash leaves
            continue
        run = json.loads((d / "run.json").read_text())
        if run["status"] != "ok":
            continue
        w = wire_us[run["levels"]["deploy.transport"]]
        rows = []
        for i, (own2, extra) in enumerate([(100.0, 0.0), (200.0, 10.0), (600.0, 20.0)]):
            tid = f"{d.name}-{i}"
            rows.append({"trace_id": tid, "depth": 0, "hop": "client→hop1", "component": "hop1",
                         "self_us": 50.0, "wire_us": 0.0})
            rows.append({"trace_id": tid, "depth": 1, "hop": "hop1→hop2", "component": "hop2",
                         "self_us": own2, "wire_us": w + extra})
        pd.DataFrame(rows).to_parquet(d / "hops.parquet", index=False)


def test_hop_summary_and_figure(tmp_path: Path) -> None:
    root = make_results(tmp_path / "traced", factors=FACTORS,
                        p99={("grpc",): 2.0, ("http",): 3.0}, failed_cell=None)
    write_hops(root, {"grpc": 300.0, "http": 900.0})
    exp = load_experiment(root)
    hops = load_hops(exp)
    assert len(hops) == 2 * 3 * len(exp.ok_runs())

    class A:  # the two attributes hop_summary reads
        factors = exp.factor_names

    s = hop_summary(hops, A())  # type: ignore[arg-type]
    s = s.set_index([CONFIG, "hop"])
    labels = config_labels(pd.DataFrame({"deploy.transport": ["grpc", "http"]}), exp.factor_names)
    grpc, http = labels.tolist()
    # Medians worked by hand from write_hops.
    assert s.loc[(grpc, "hop1→hop2"), "self_ms"] == 0.2
    assert s.loc[(grpc, "hop1→hop2"), "wire_ms"] == 0.31
    assert s.loc[(http, "hop1→hop2"), "wire_ms"] == 0.91
    assert s.loc[(http, "client→hop1"), "self_ms"] == 0.05
    assert s.loc[(http, "client→hop1"), "depth"] == 0

    build_report(root)
    assert (root / "figures" / "hops.png").stat().st_size > 1000
    md = (root / "report.md").read_text()
    assert "](figures/hops.png)" in md


def test_no_hops_no_figure(tmp_path: Path) -> None:
    root = make_results(tmp_path / "plain", factors=FACTORS,
                        p99={("grpc",): 2.0, ("http",): 3.0}, failed_cell=None)
    build_report(root)
    assert not (root / "figures" / "hops.png").exists()


def test_hop_summary_proxies(tmp_path: Path) -> None:
    """With proxy spans, the wire splits into the proxies' part (proxy_us)
    and the legs they do not see; the entry's proxy has no wire around it."""
    root = make_results(tmp_path / "proxied", factors=FACTORS,
                        p99={("grpc",): 2.0, ("http",): 3.0}, failed_cell=None)
    write_hops(root, {"grpc": 300.0, "http": 900.0})
    for d in (root / "runs").iterdir():
        p = d / "hops.parquet"
        if not p.exists():
            continue
        df = pd.read_parquet(p)
        # Entry: its proxy took 40 µs; hop2: 250 µs of the wire in proxies.
        df["proxy_us"] = [40.0 if h == "client→hop1" else 250.0 for h in df["hop"]]
        df.to_parquet(p, index=False)
    exp = load_experiment(root)

    class A:
        factors = exp.factor_names

    s = hop_summary(load_hops(exp), A()).set_index([CONFIG, "hop"])  # type: ignore[arg-type]
    labels = config_labels(pd.DataFrame({"deploy.transport": ["grpc", "http"]}), exp.factor_names)
    grpc, _ = labels.tolist()
    # Worked by hand: grpc's wire to hop2 is 300 + (0, 10, 20) µs, 250 of it proxies.
    assert s.loc[(grpc, "hop1→hop2"), "proxy_ms"] == 0.25
    assert abs(s.loc[(grpc, "hop1→hop2"), "wire_ms"] - 0.06) < 1e-12
    assert s.loc[(grpc, "client→hop1"), "wire_ms"] == 0.0
    assert s.loc[(grpc, "client→hop1"), "proxy_ms"] == 0.04
    build_report(root)
    assert (root / "figures" / "hops.png").stat().st_size > 1000
