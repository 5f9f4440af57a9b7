"""S4: RPC systems (gRPC against Go's net/rpc) on one machine."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ..design import anova
from ..errors import AnalysisError
from ..formatting import integer, md_table, num, p_text, pval
from ..stats import sample_size
from .common import (
    CONFIDENCE,
    Claim,
    Ratio,
    Section,
    StudyData,
    Summary,
    cell,
    factor_levels,
    ratio_cell,
    ratio_of,
    summarise,
    summary_cell,
    values,
)

METRIC = "mean_ms"
# S4: ms per call on one machine, as ranges over the operations.
S4_PAPER_GRPC_MS = (7.0, 7.7)  # gRPC, Python client and server
S4_PAPER_NETRPC_MS = (0.7, 1.1)  # Go net/rpc
S4_STRING_LENS = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
S4_OPS = ["void", "long", "eightlongs", "string", "movie"]


@dataclass(frozen=True)
class OperationRow:
    """One operation (or one string length): both transports over runs and their ratio."""

    label: str
    grpc: Summary
    netrpc: Summary
    ratio: Ratio


@dataclass(frozen=True)
class Share:
    """How much of an operation's variation `app.string_len` explains (ANOVA)."""

    operation: str
    percent: float
    p: float
    error: str | None = None  # why the ANOVA was not computed


@dataclass(frozen=True)
class S4:
    """Everything the S4 region reports, computed from one results directory."""

    rows: tuple[OperationRow, ...]
    ratio_range: tuple[float, float] | None  # grpc ÷ netrpc over the rows with an interval
    verdict: str | None  # on "net/rpc is faster", None without an interval
    shares: tuple[Share, ...]
    jain: pd.DataFrame | None  # sample_size() per operation and transport, with cv
    flagged: int
    runs: int


def compute(data: StudyData) -> S4:
    lens = factor_levels(data, "app.string_len", "16")
    rows: list[OperationRow] = []
    ratios: list[Ratio] = []  # per operation and per string length, without the pooled row
    jain_rows: list[pd.DataFrame] = []
    for op in S4_OPS:
        if op not in data.tables:
            continue
        df = data.table(op)
        groups: list[tuple[str, str | None]] = [(op, None)]
        if op == "string" and len(lens) > 1:
            groups = [(f"string, {n} chars", n) for n in lens]
            groups.append(("string, all lengths pooled", None))
        for label, n in groups:
            part = df if n is None else cell(df, **{"app.string_len": n})
            g = values(part, METRIC, **{"deploy.transport": "grpc"})
            nr = values(part, METRIC, **{"deploy.transport": "netrpc"})
            r = ratio_of(g, nr)
            if label != "string, all lengths pooled":
                ratios.append(r)
            rows.append(OperationRow(label, summarise(g), summarise(nr), r))
            if len(part) > 0:
                ss = sample_size(part, METRIC, by=["deploy.transport"], error_pct=5.0,
                                 confidence=CONFIDENCE)
                ss.insert(0, "operation", label)
                jain_rows.append(ss)
    shares: list[Share] = []
    if len(lens) > 1:
        for op in ("void", "string"):
            if op not in data.tables:
                continue
            try:
                av = anova(data.table(op), METRIC, ["deploy.transport", "app.string_len"])
                t = av.set_index("term")
                shares.append(Share(op, float(t.loc["app.string_len", "percent"]),
                                    float(t.loc["app.string_len", "p"])))
            except (AnalysisError, KeyError) as exc:
                shares.append(Share(op, math.nan, math.nan, str(exc)))
    jain = None
    if jain_rows:
        jain = pd.concat(jain_rows, ignore_index=True)
        jain["cv"] = 100.0 * jain["sd"] / jain["mean"]
    finite = [x for x in ratios if math.isfinite(x.lo)]
    ratio_range: tuple[float, float] | None = None
    verdict: str | None = None
    if finite:
        ratio_range = (min(x.ratio for x in finite), max(x.ratio for x in finite))
        verdict = ("holds for every operation" if all(x.lo > 1 for x in finite) else
                   "does not hold for at least one operation" if any(x.hi < 1 for x in finite)
                   else "inconclusive for at least one operation (an interval includes 1)")
    return S4(tuple(rows), ratio_range, verdict, tuple(shares), jain,
              int(data.runs["bottleneck"].sum()), len(data.runs))


PAPER_RATIO = (f"{num(S4_PAPER_GRPC_MS[0] / S4_PAPER_NETRPC_MS[1])}–"
               f"{num(S4_PAPER_GRPC_MS[1] / S4_PAPER_NETRPC_MS[0])}×")


def share_text(s: Share) -> str:
    if s.error is not None:
        return f"`{s.operation}` not computed ({s.error})"
    percent = "< 0.01" if s.percent < 0.01 else num(s.percent)
    return f"`{s.operation}` {percent}% ({p_text(s.p)})"


def render(r: S4) -> Section:
    """The region's Markdown (after the provenance) and the claim it tested."""
    claims: list[Claim] = []
    out = []
    out.append("**Mean latency per call (ms)**, one call in flight. Paper (one machine): gRPC "
               f"with a Python client and server {num(S4_PAPER_GRPC_MS[0])}–"
               f"{num(S4_PAPER_GRPC_MS[1])} ms, Go net/rpc {num(S4_PAPER_NETRPC_MS[0])}–"
               f"{num(S4_PAPER_NETRPC_MS[1])} ms, i.e. gRPC {PAPER_RATIO} slower, from 10 calls "
               "per operation. svclab: both sides in Go; the mean over runs of each run's mean, "
               "with a 95% Student-t interval over runs; grpc ÷ netrpc is the ratio of the run "
               "values' medians with a 95% bootstrap interval. Operations other than `string` "
               "do not depend on `app.string_len`, so their runs are pooled over it.")
    out.append("")
    rows = [[o.label, summary_cell(o.grpc), summary_cell(o.netrpc), ratio_cell(o.ratio),
             pval(o.ratio.p), f"{o.grpc.n} / {o.netrpc.n}"] for o in r.rows]
    out.append(md_table(["operation", "grpc (ms)", "netrpc (ms)", "grpc ÷ netrpc",
                         "p (runs)", "runs grpc / netrpc"], rows))
    out.append("")
    if r.ratio_range is not None and r.verdict is not None:
        lo, hi = r.ratio_range
        v = r.verdict
        out.append(f"grpc ÷ netrpc ranges over {num(lo)}–{num(hi)}× here, against "
                   f"{PAPER_RATIO} in the paper. "
                   f"Verdict on *net/rpc is faster than gRPC on one machine*: **{v}**.")
        claims.append(Claim("S4", "net/rpc is faster than gRPC on one machine", v,
                            f"grpc ÷ netrpc {num(lo)}–{num(hi)}×", PAPER_RATIO))
        out.append("")
    if r.shares:
        out.append("How much `app.string_len` explains of the variation of the mean latency "
                   "(ANOVA over transport × string_len): "
                   + "; ".join(share_text(s) for s in r.shares) + ". It is not an input of "
                   "`void` at all, which is why the other operations are pooled over it.")
        out.append("")
    if r.jain is not None:
        jr = r.jain
        out.append("**Repetitions (Jain).** From these runs, the repetitions each configuration "
                   "needs for a ±5% interval on the mean at 95% "
                   "(n = (100·t·s / (5·x̄))²), and the half-width the runs made achieve.")
        out.append("")
        rows = []
        for label in dict.fromkeys(jr["operation"]):
            row = [str(label)]
            for tr in ("grpc", "netrpc"):
                sel = jr[(jr["operation"] == label) & (jr["deploy.transport"].astype(str) == tr)]
                if sel.empty:
                    row += ["—", "—", "—", "—"]
                    continue
                x = sel.iloc[0]
                row += [str(int(x["n"])), num(x["cv"]), integer(x["required"]),
                        f"±{num(x['halfwidth_pct'])}%"]
            rows.append(row)
        out.append(md_table(["operation", "grpc runs", "grpc sd/mean (%)", "grpc runs needed",
                             "grpc achieved", "netrpc runs", "netrpc sd/mean (%)",
                             "netrpc runs needed", "netrpc achieved"], rows))
        out.append("")
    out.append(f"Runs flagged by the generator's self-audit: {r.flagged} of {r.runs}.")
    return Section("\n".join(out), tuple(claims))


def section(data: StudyData) -> Section:
    return render(compute(data))
