"""The per-hop breakdown from hops.parquet (deploy.tracing) in the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pandas as pd
from synth import make_results

from svclab_analysis import plots
from svclab_analysis.report import build_report
from svclab_analysis.report.analysis import CONFIG, config_labels
from svclab_analysis.report.document import hop_caption
from svclab_analysis.report.figures import TOP_HOPS, hop_summary, top_hops
from svclab_analysis.results import load_experiment, load_hops

FACTORS = [{"name": "deploy.transport", "levels": ["grpc", "http"]}]


def write_hops(root: Path, wire_us: dict[str, float]) -> None:
    """Three requests per ok run through hop1 → hop2: hop2's own time is 100,
    200, 600 µs (300 per request), hop1's 50 µs; the wire to hop2 is the
    transport's wire_us plus 0, 10, 20 µs (+10 per request)."""
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
    # Means per request worked by hand from write_hops.
    assert s.loc[(grpc, "hop1→hop2"), "self_ms"] == 0.3
    assert s.loc[(grpc, "hop1→hop2"), "wire_ms"] == 0.31
    assert s.loc[(http, "hop1→hop2"), "wire_ms"] == 0.91
    assert s.loc[(http, "client→hop1"), "self_ms"] == 0.05
    assert s.loc[(http, "client→hop1"), "depth"] == 0

    build_report(root)
    assert (root / "figures" / "hops.png").stat().st_size > 1000
    md = (root / "report.md").read_text()
    assert "](figures/hops.png)" in md
    assert "Each hop's time per traced request" in md


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


def trace_rows(transport: str, i: int, with_b: bool) -> list[dict]:
    """One traced request of gateway, which calls a twice (own time 100 µs,
    then 500) and, in 3 requests of 10, b (1000 µs); every wire is 50 µs but
    b's, 100. Over grpc the calls are made one after another, over http
    a's two at once (then b): gateway's own work is 100 µs, or 300 µs of
    which Go's self_us (its server span less its client spans) sees 150."""
    par = transport == "http"
    a1, a2 = 25e-6, 25e-6 if par else 175e-6
    b = (600e-6 if par else 750e-6)
    own = 300.0 if par else 100.0
    server = (550.0 if par else 700.0) + (1100.0 if with_b else 0.0) + own
    clients = 150.0 + 550.0 + (1100.0 if with_b else 0.0)
    rows = [("client→gateway", "gateway", 0, 0.0, server, server - clients, 0.0),
            ("gateway→a", "a", 1, a1, 100.0, 100.0, 50.0),
            ("gateway→a", "a", 1, a2, 500.0, 500.0, 50.0)]
    if with_b:
        rows.append(("gateway→b", "b", 1, b, 1000.0, 1000.0, 100.0))
    return [{"deploy.transport": transport, "run_id": f"{transport}-run", "trace_id": f"t{i}",
             "hop": hop, "component": c, "depth": d, "start_s": 10.0 + start,
             "server_us": srv, "self_us": own_us, "wire_us": wire}
            for hop, c, d, start, srv, own_us, wire in rows]


def synth_hops() -> pd.DataFrame:
    return pd.DataFrame([r for t in ("grpc", "http") for i in range(10)
                         for r in trace_rows(t, i, with_b=i < 3)])


class Factors:  # the one attribute of an Analysis hop_summary reads
    factors: ClassVar[list[str]] = ["deploy.transport"]


def test_hop_summary_per_request() -> None:
    """A hop called with probability 0.3 counts 0.3 of its time per call, one
    called twice counts twice; calls one after another add up to the
    request, calls at once are marked and add up to more."""
    s = hop_summary(synth_hops(), Factors())  # type: ignore[arg-type]
    grpc, http = config_labels(pd.DataFrame({"deploy.transport": ["grpc", "http"]}),
                               Factors.factors).tolist()
    assert s["hop"].drop_duplicates().tolist() == ["client→gateway", "gateway→a", "gateway→b"]
    s = s.set_index([CONFIG, "hop"])
    # By hand, per request of 10: a, twice per request, (100 + 500) µs of
    # own time and 2 × 50 µs of wire; b, in 3 of them, 3 × 1000 / 10 µs and
    # 3 × 100 / 10 µs.
    for cfg in (grpc, http):
        assert abs(s.loc[(cfg, "gateway→a"), "self_ms"] - 0.6) < 1e-12
        assert abs(s.loc[(cfg, "gateway→a"), "wire_ms"] - 0.1) < 1e-12
        assert abs(s.loc[(cfg, "gateway→b"), "self_ms"] - 0.3) < 1e-12
        assert abs(s.loc[(cfg, "gateway→b"), "wire_ms"] - 0.03) < 1e-12
        assert s.loc[(cfg, "gateway→a"), "calls"] == 2.0
        assert s.loc[(cfg, "gateway→b"), "calls"] == 0.3
        assert s.loc[(cfg, "gateway→b"), "parallel"] == 0.0
    assert abs(s.loc[(grpc, "client→gateway"), "self_ms"] - 0.1) < 1e-12
    # One after another: the hops sum to the mean request, (3 × 1900 +
    # 7 × 800) / 10 µs.
    g = s.loc[grpc]
    assert abs(g["request_ms"].iloc[0] - 1.13) < 1e-12
    assert abs((g["self_ms"] + g["wire_ms"] + g["proxy_ms"]).sum() - 1.13) < 1e-12
    assert g["parallel"].max() == 0.0
    # a's two calls at once over http: marked, and the gateway's own time
    # seen is 150 of its 300 µs; the request took (3 × 1950 + 7 × 850) / 10.
    h = s.loc[http]
    assert h.loc["gateway→a", "parallel"] == 1.0
    assert abs(h.loc["client→gateway", "self_ms"] - 0.15) < 1e-12
    assert abs(h["request_ms"].iloc[0] - 1.18) < 1e-12


def test_hop_summary_clamps_own_time() -> None:
    """A component's own time below zero (its calls overlapped by more than
    its work) counts as zero, call by call."""
    hops = synth_hops()
    hops.loc[(hops["deploy.transport"] == "http") & (hops["depth"] == 0) &
             (hops["trace_id"] == "t0"), "self_us"] = -200.0
    s = hop_summary(hops, Factors()).set_index([CONFIG, "hop"])  # type: ignore[arg-type]
    http = config_labels(pd.DataFrame({"deploy.transport": ["http"]}), Factors.factors)[0]
    assert abs(s.loc[(http, "client→gateway"), "self_ms"] - 9 * 0.15 / 10) < 1e-12


def test_top_hops_folds_the_rest() -> None:
    """Past n hops, the smallest are summed per configuration into "other"."""
    rows = [{CONFIG: cfg, "hop": f"s→h{k:02d}", "depth": 1, "self_ms": float(k + j),
             "wire_ms": 0.5, "proxy_ms": 0.0, "calls": 1.0, "parallel": float(k == 0),
             "request_ms": 9.0}
            for j, cfg in enumerate(["x", "y"]) for k in range(15)]
    t = top_hops(pd.DataFrame(rows), n=12)
    assert len(t) == 2 * 13
    other = t[t["other"]].set_index(CONFIG)
    assert other.loc["x", "hop"] == "other (3 hops)"
    # h00, h01, h02 are the smallest: x's own times 0 + 1 + 2, y's 1 + 2 + 3.
    assert other.loc["x", "self_ms"] == 3.0
    assert other.loc["y", "self_ms"] == 6.0
    assert other.loc["x", "wire_ms"] == 1.5
    assert abs(other.loc["x", "parallel"] - 1 / 3) < 1e-12  # h00's one call of three
    assert set(t.loc[~t["other"], "hop"]) == {f"s→h{k:02d}" for k in range(3, 15)}
    assert t["hop"].iloc[-1].startswith("other")
    assert top_hops(pd.DataFrame(rows), n=15)["other"].sum() == 0


def png_size(png: bytes) -> tuple[int, int]:
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def test_hop_breakdown_draws() -> None:
    """The figure of a hundred hops has a colour for each it names and stays
    a sane size; more hops than colours are refused."""
    rows = [{CONFIG: cfg, "hop": f"s{k // 3}→s{k}", "depth": k % 5, "self_ms": 1 / (k + 1),
             "wire_ms": 0.01, "proxy_ms": 0.0, "calls": 1.0, "parallel": float(k % 4 == 1),
             "request_ms": 2.0}
            for cfg in ["monolith", "split", "groups"] for k in range(100)]
    s = pd.DataFrame(rows)
    assert len(set(plots.HOP_PALETTE)) == len(plots.HOP_PALETTE) == TOP_HOPS
    png = plots.hop_breakdown(top_hops(s), CONFIG, ["monolith", "split", "groups"], "t")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = png_size(png)
    assert w < 1400 and h < 700, (w, h)
    try:
        plots.hop_breakdown(s, CONFIG, ["monolith"], "t")
    except ValueError as e:
        assert "100 hops" in str(e)
    else:
        raise AssertionError("100 hops drawn in 12 colours")


def test_hop_caption() -> None:
    t = top_hops(hop_summary(synth_hops(), Factors()), n=2)  # type: ignore[arg-type]
    text = hop_caption(t)
    assert "1 hop(s) marked (parallel)" in text
    both = t.assign(parallel=0.5)
    assert "3 hop(s) marked (parallel)" in hop_caption(both)
    assert "the rest are summed into the grey segment, other (1 hops)." in text
    assert hop_caption(top_hops(hop_summary(synth_hops().query("`deploy.transport` == 'grpc'"),
                                            Factors()))) == ""  # type: ignore[arg-type]
