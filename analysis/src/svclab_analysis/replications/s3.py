"""S3: communication style (gRPC against REST) and payload size."""

from __future__ import annotations

import math

from ..design import factorial
from ..errors import AnalysisError
from ..formatting import est, md_table, num, pval
from ..results import Experiment, response_table
from .common import (
    AUDIT_HEADER,
    CONFIDENCE,
    Claim,
    Summary,
    audit_rows,
    cell,
    ratio_cell,
    ratio_of,
    summarise,
    summary_cell,
    values,
    verdict,
)
from .store import closed_loop, provenance

# S3: median latency in seconds (std dev), per implementation and size.
S3_PAPER: dict[tuple[str, str], tuple[float, float]] = {
    ("Go/gRPC", "std"): (0.00071, 0.00006),
    ("Go/gRPC", "large"): (0.00768, 0.00070),
    ("Go/REST", "std"): (0.00323, 0.00028),
    ("Go/REST", "large"): (0.00447, 0.00067),
    ("Java/gRPC", "std"): (0.00119, 0.00017),
    ("Java/gRPC", "large"): (0.00803, 0.00134),
    ("Java/REST", "std"): (0.00321, 0.00023),
    ("Java/REST", "large"): (0.00451, 0.00066),
}
# S3: allocation of variation (%), StdSize / LargeSize.
S3_PAPER_ALLOCATION: dict[str, tuple[float, float]] = {
    "language": (1.67, 1.69),
    "communication style": (93.66, 96.40),
    "interaction": (2.27, 0.66),
    "error": (2.38, 1.23),
}
S3_PAPER_N = 77  # requests per repetition, from Jain's formula on a 10-request pilot
S3_PAPER_R = 5


def s3_section(exp: Experiment, claims: list[Claim]) -> str:
    metric = "p50_ms"
    shape = "back-to-back calls" if closed_loop(exp) else "open loop"
    df = response_table(exp, "total")
    sizes = ["std", "large"]
    transports = [("grpc", "Go/gRPC"), ("http", "Go/REST")]
    out = [provenance(exp, "bin/svclab run experiments/s3-style.toml"), ""]

    out.append("**Median latency (ms).** Paper: the median (sd) of its requests. svclab: the "
               "mean over runs of each run's median, with a 95% Student-t interval over runs, "
               "and the runs' sd.")
    out.append("")
    rows = []
    summ: dict[tuple[str, str], Summary] = {}
    for tr, label in transports:
        row = [label]
        for size in sizes:
            med, sd = S3_PAPER[(label, size)]
            s = summarise(values(df, metric, **{"deploy.transport": tr, "app.size": size}))
            summ[(tr, size)] = s
            row += [f"{num(med * 1e3)} ({num(sd * 1e3)})",
                    f"{summary_cell(s)}, sd {num(s.sd)}, {s.n} runs"]
        rows.append(row)
    for label in ("Java/gRPC", "Java/REST"):
        row = [label]
        for size in sizes:
            med, sd = S3_PAPER[(label, size)]
            row += [f"{num(med * 1e3)} ({num(sd * 1e3)})", "not run (no Java implementation yet)"]
        rows.append(row)
    out.append(md_table(["implementation", "StdSize, paper", "StdSize, svclab",
                         "LargeSize, paper", "LargeSize, svclab"], rows))
    out.append("")

    out.append("**Which style wins.** REST ÷ gRPC: the paper's ratio of medians (Go), and "
               "svclab's ratio of the run medians with a 95% bootstrap interval over runs; p is "
               "Mann-Whitney U over runs (with 5 runs a side, the smallest possible p is 0.008).")
    out.append("")
    rows = []
    verdicts: dict[str, str] = {}
    for size, claim, above in (("std", "gRPC wins small requests", True),
                               ("large", "REST wins large requests", False)):
        paper = S3_PAPER[("Go/REST", size)][0] / S3_PAPER[("Go/gRPC", size)][0]
        r = ratio_of(values(df, metric, **{"deploy.transport": "http", "app.size": size}),
                     values(df, metric, **{"deploy.transport": "grpc", "app.size": size}))
        v = verdict(r.lo, r.hi, above)
        verdicts[size] = v
        claims.append(Claim("S3", f"{claim} ({shape})", v, f"REST ÷ gRPC {ratio_cell(r)}",
                            f"{num(paper)}×"))
        rows.append(["StdSize" if size == "std" else "LargeSize", f"{num(paper)}×",
                     ratio_cell(r), pval(r.p), claim, v])
    out.append(md_table(["size", "paper (Go)", "svclab", "p (runs)", "paper's claim",
                         "on this machine"], rows))
    out.append("")

    out.append("**Allocation of variation of the median latency, per size** (Jain ch. 18). The "
               "paper's 2²r design crosses language and style; svclab's has the style only "
               "(a 2¹r design per size), so the language rows are empty here.")
    out.append("")
    alloc: dict[str, dict[str, float]] = {}
    for size in sizes:
        part = cell(df, **{"app.size": size})
        try:
            fit = factorial(part, metric, ["deploy.transport"], confidence=CONFIDENCE)
            t = fit.terms.set_index("term")
            alloc[size] = {"style": float(t.loc["deploy.transport", "percent"]),
                           "error": float(t.loc["Residual", "percent"])}
        except AnalysisError:
            alloc[size] = {"style": math.nan, "error": math.nan}
    for i, size in enumerate(sizes):
        share = alloc[size]["style"]
        paper_share = S3_PAPER_ALLOCATION["communication style"][i]
        claims.append(Claim(
            "S3", f"the style explains most of the variation, {size} ({shape})",
            "inconclusive (not computed)" if not math.isfinite(share) else
            "holds" if share > 50 else "does not hold",
            f"{num(share)}%", f"{num(paper_share)}%"))
    rows = []
    for term, (p_std, p_large) in S3_PAPER_ALLOCATION.items():
        key = {"communication style": "style", "error": "error"}.get(term)
        ours = [num(alloc[s][key]) if key else "—" for s in sizes]
        rows.append([term, num(p_std), ours[0], num(p_large), ours[1]])
    out.append(md_table(["term", "StdSize, paper (%)", "StdSize, svclab (%)",
                         "LargeSize, paper (%)", "LargeSize, svclab (%)"], rows))
    out.append("")

    out.append("**2²r over transport × size, on log(median latency)**: effects as ratios "
               "(+1 level ÷ −1 level) with 95% intervals, and each term's share of the variation.")
    out.append("")
    try:
        fit = factorial(df, metric, ["deploy.transport", "app.size"], log=True,
                        confidence=CONFIDENCE)
        rows = []
        for _, t in fit.terms.iterrows():
            if t["term"] == "Intercept":
                continue
            if t["term"] == "Residual":
                rows.append(["error (between runs)", "—", num(t["percent"])])
                continue
            rows.append([str(t["term"]), est(t["ratio"], t["ratio_low"], t["ratio_high"], "×"),
                         num(t["percent"])])
        coding = ", ".join(f"{c.name}: −1 = {c.low}, +1 = {c.high}" for c in fit.factors)
        out.append(md_table(["term", "ratio (95% CI)", "variation explained (%)"], rows))
        out.append("")
        out.append(f"*Coding: {coding}; r = {fit.replications}.*")
    except AnalysisError as exc:
        out.append(f"*Not computed: {exc}.*")
    out.append("")

    out.append("**Cost per request and the generator's self-audit** (evidence for the "
               "differences): CPU of the system under test per request, from resources.parquet, "
               "and the median service time (from the actual send, so free of the generator's "
               "lateness), both as the mean over runs with a 95% interval; the generator's own "
               "CPU, the share of sends that left more than 1 ms late, the worst run's send lag "
               "p99, and the runs the self-audit flagged.")
    out.append("")
    configs = [({"deploy.transport": tr, "app.size": size}, [label, size])
               for tr, label in transports for size in sizes]
    out.append(md_table(["implementation", "size", *AUDIT_HEADER],
                        audit_rows(exp, df, configs)))
    out.append("")
    out.append("Verdicts, computed from the intervals: StdSize, *gRPC wins*: "
               f"**{verdicts['std']}**; LargeSize, *REST wins*: **{verdicts['large']}**.")
    return "\n".join(out)
