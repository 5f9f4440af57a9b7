"""S4 across hosts: gRPC against Go's net/rpc between two emulated machines over a Wi-Fi-like link.

The runs of experiments/s4-hosts.toml: transport × hosts, where the hosts
factor puts both groups on one host (the same-host result) or the callee
on a second host behind the link. Per operation and placement, each
transport's mean over runs; grpc ÷ netrpc per placement; and what the link
adds to each transport's call (two hosts − one host).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from ..formatting import md_table, num, pval
from .common import (
    Claim,
    Difference,
    Ratio,
    Section,
    StudyData,
    Summary,
    cell,
    difference_of,
    factor_levels,
    overall,
    ratio_cell,
    ratio_of,
    summarise,
    summary_cell,
    values,
    verdict,
)
from .s4 import S4_OPS

METRIC = "mean_ms"
HOSTS = "deploy.hosts"
TRANSPORT = "deploy.transport"
# The link of experiments/s4-hosts.toml, for the text.
LINK = "4 ms round trip, 2 ms jitter, 1% loss, 54 Mbit/s"
# S4's second setup (two laptops over Wi-Fi), ms per call.
PAPER_GRPC_MS = (160.0, 360.0)
PAPER_NETRPC_MS = (0.6, 11.0)  # 0.6–0.8 for strings, 8–11 for the other operations
PAPER = (f"gRPC {num(PAPER_GRPC_MS[0])}–{num(PAPER_GRPC_MS[1])} ms, net/rpc "
         f"{num(PAPER_NETRPC_MS[0])}–{num(PAPER_NETRPC_MS[1])} ms")
CLAIM = "net/rpc is faster than gRPC between two machines over Wi-Fi"


def hosts_label(level: str) -> str:
    """'one host', 'two hosts', … from a deploy.hosts level (a JSON table of hosts)."""
    try:
        n = len(json.loads(level))
    except (ValueError, TypeError):
        return level
    return {1: "one host", 2: "two hosts"}.get(n, f"{n} hosts")


@dataclass(frozen=True)
class Row:
    """One operation on one placement: each transport over runs, and grpc ÷ netrpc."""

    operation: str
    hosts: str
    transports: tuple[tuple[str, Summary], ...]
    ratio: Ratio  # grpc ÷ netrpc


@dataclass(frozen=True)
class LinkCost:
    """What crossing the link adds to one transport's call: two hosts − one host."""

    operation: str
    transport: str
    added: Difference


@dataclass(frozen=True)
class S4Hosts:
    rows: tuple[Row, ...]
    link_costs: tuple[LinkCost, ...]
    ratio_range: dict[str, tuple[float, float]]  # placement → grpc ÷ netrpc over operations
    verdict: str | None  # on CLAIM, over the operations across hosts; None without intervals
    flagged: int
    runs: int


def compute(data: StudyData) -> S4Hosts:
    transports = factor_levels(data, TRANSPORT, "grpc")
    placements = factor_levels(data, HOSTS, "")
    ops = [op for op in ("total", *S4_OPS) if op in data.tables]
    rows: list[Row] = []
    costs: list[LinkCost] = []
    ratios: dict[str, list[Ratio]] = {}
    for op in ops:
        df = data.table(op)
        by_place = {p: cell(df, **{HOSTS: p}) if p else df for p in placements}
        for p, part in by_place.items():
            label = hosts_label(p)
            sums = tuple((t, summarise(values(part, METRIC, **{TRANSPORT: t})))
                         for t in transports)
            r = ratio_of(values(part, METRIC, **{TRANSPORT: "grpc"}),
                         values(part, METRIC, **{TRANSPORT: "netrpc"}))
            rows.append(Row("all operations" if op == "total" else op, label, sums, r))
            if op != "total":
                ratios.setdefault(label, []).append(r)
        labels = {hosts_label(p): p for p in placements}
        if "one host" in labels and "two hosts" in labels:
            one, two = by_place[labels["one host"]], by_place[labels["two hosts"]]
            for t in transports:
                costs.append(LinkCost("all operations" if op == "total" else op, t,
                                      difference_of(values(two, METRIC, **{TRANSPORT: t}),
                                                    values(one, METRIC, **{TRANSPORT: t}))))
    ranges = {label: (min(x.ratio for x in rs), max(x.ratio for x in rs))
              for label, rs in ratios.items() if any(math.isfinite(x.ratio) for x in rs)}
    across = [x for x in ratios.get("two hosts", []) if math.isfinite(x.lo)]
    v = overall([verdict(x.lo, x.hi, expect_above_one=True) for x in across]) if across else None
    return S4Hosts(tuple(rows), tuple(costs), ranges, v,
                   int(data.runs["bottleneck"].sum()), len(data.runs))


def render(r: S4Hosts) -> Section:
    """The region's Markdown (after the provenance) and the claim it tested."""
    out = [f"**Mean latency per call (ms)**, one call in flight, per placement: both groups on "
           f"one host, or the callee on a second host behind a Wi-Fi-like link ({LINK}; a "
           "lost segment costs TCP's 200 ms retransmission timeout). The mean over runs of "
           "each run's mean, with a 95% Student-t interval; grpc ÷ netrpc is the ratio of the "
           "run values' medians with a 95% bootstrap interval and Mann-Whitney's p. "
           f"Paper (two laptops over Wi-Fi, Python gRPC): {PAPER}.", ""]
    transports = [t for t, _ in r.rows[0].transports] if r.rows else []
    rows = [[x.operation, x.hosts, *(summary_cell(s) for _, s in x.transports),
             ratio_cell(x.ratio), pval(x.ratio.p)] for x in r.rows]
    out.append(md_table(["operation", "hosts", *(f"{t} (ms)" for t in transports),
                         "grpc ÷ netrpc", "p (runs)"], rows))
    out.append("")
    if r.link_costs:
        out.append("**What the link adds** per call (two hosts − one host, ms, Welch's 95% "
                   "interval):")
        out.append("")
        ops = list(dict.fromkeys(c.operation for c in r.link_costs))
        by = {(c.operation, c.transport): c.added for c in r.link_costs}

        def diff_cell(d: Difference) -> str:
            if not math.isfinite(d.lo):
                return num(d.diff)
            return f"{num(d.diff)} ({num(d.lo)}–{num(d.hi)})"

        out.append(md_table(["operation", *transports],
                            [[op, *(diff_cell(by[(op, t)]) for t in transports)] for op in ops]))
        out.append("")
    claims: list[Claim] = []
    if r.ratio_range:
        parts = [f"{num(lo)}–{num(hi)}× on {label}"
                 for label, (lo, hi) in sorted(r.ratio_range.items())]
        out.append("grpc ÷ netrpc over the operations: " + ", ".join(parts) + ".")
    if r.verdict is not None and "two hosts" in r.ratio_range:
        lo, hi = r.ratio_range["two hosts"]
        out.append(f"Verdict on *{CLAIM}*: **{r.verdict}**.")
        claims.append(Claim("S4", CLAIM, r.verdict, f"grpc ÷ netrpc {num(lo)}–{num(hi)}×",
                            PAPER))
    out.append("")
    out.append(f"Runs flagged by the generator's self-audit: {r.flagged} of {r.runs}.")
    return Section("\n".join(out), tuple(claims))


def section(data: StudyData) -> Section:
    return render(compute(data))
