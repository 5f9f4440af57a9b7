"""S3: communication style (gRPC against REST) and payload size."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from scipy import stats

from ..design import Factorial, factorial
from ..english import count
from ..errors import AnalysisError
from ..formatting import est, md_table, num, pval
from .common import (
    AUDIT_HEADER,
    CONFIDENCE,
    Audit,
    Claim,
    Ratio,
    Section,
    StudyData,
    Summary,
    audit,
    audit_cells,
    cell,
    ratio_cell,
    ratio_of,
    summarise,
    summary_cell,
    values,
    verdict,
)

METRIC = "p50_ms"

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


SIZES = ("std", "large")
SIZE_LABELS = {"std": "StdSize", "large": "LargeSize"}
TRANSPORTS = (("grpc", "Go/gRPC"), ("http", "Go/REST"))
# The language factor: the frontend's, which the client calls (the selector
# runs in the same language, experiments/s3-style.toml's generator). A
# results directory without it ran Go alone.
LANG = "deploy.languages.frontend"
LANGUAGES = (("go", "Go"), ("java", "Java"))
STYLE_LABEL = {"grpc": "gRPC", "http": "REST"}
# The paper's claim per size, and whether it needs REST ÷ gRPC above 1.
S3_CLAIMS = (("std", "gRPC wins small requests", True),
             ("large", "REST wins large requests", False))
# REST ÷ gRPC in the paper (Go), per size.
S3_PAPER_RATIO = {size: S3_PAPER[("Go/REST", size)][0] / S3_PAPER[("Go/gRPC", size)][0]
                  for size in SIZES}


@dataclass(frozen=True)
class StyleRatio:
    """REST ÷ gRPC at one size, and the verdict on the paper's claim there."""

    size: str
    claim: str
    ratio: Ratio
    verdict: str


@dataclass(frozen=True)
class Allocation:
    """What share of one size's variation the style explains (2¹r design), and the rest."""

    style: float  # percent, NaN when the fit failed
    error: float
    verdict: str  # on "the style explains most of the variation"


@dataclass(frozen=True)
class LanguageStyle:
    """One size's 2²r over language × style (Jain ch. 18) and the rank tests over runs."""

    size: str
    percent: dict[str, float]  # term (S3_PAPER_ALLOCATION's names) → % of the variation
    kruskal_p: float  # Kruskal-Wallis over the four implementations' run medians
    wilcoxon_p: dict[str, float]  # style → Wilcoxon rank-sum, Go against Java
    verdict: str  # on "the style explains more of the variation than the language"


@dataclass(frozen=True)
class S3:
    """Everything the S3 region reports, computed from one results directory."""

    closed_loop: bool
    medians: dict[tuple[str, str], Summary]  # (transport, size) → the runs' medians
    ratios: tuple[StyleRatio, ...]  # in S3_CLAIMS' order
    allocation: dict[str, Allocation]  # per size
    fit: Factorial | None  # 2²r over transport × size on log(median)
    fit_error: str | None  # why `fit` is None
    audits: dict[tuple[str, str], Audit]  # (transport, size) → cost and self-audit
    # Java's run medians per (transport, size), and the language × style
    # analysis per size: empty when the results have no Java runs.
    java_medians: dict[tuple[str, str], Summary]
    language_style: dict[str, LanguageStyle]


def language_style(df: pd.DataFrame, size: str) -> LanguageStyle:
    """S3's 2²r allocation of variation at one size, on the run medians as the paper
    did (not on logs), with its Kruskal-Wallis and Wilcoxon rank-sum tests."""
    one = cell(df, **{"app.size": size})
    fit = factorial(one, METRIC, [LANG, "deploy.transport"], confidence=CONFIDENCE)
    names = {frozenset([LANG]): "language", frozenset(["deploy.transport"]): "communication style",
             frozenset([LANG, "deploy.transport"]): "interaction",
             frozenset(["Residual"]): "error"}
    percent = {names[frozenset(str(t["term"]).split(":"))]: float(t["percent"])
               for _, t in fit.terms.iterrows() if t["term"] != "Intercept"}
    groups = [values(one, METRIC, **{LANG: lang, "deploy.transport": tr})
              for lang, _ in LANGUAGES for tr, _ in TRANSPORTS]
    kruskal_p = float(stats.kruskal(*groups).pvalue)
    wilcoxon_p = {}
    for tr, _ in TRANSPORTS:
        go, java = (values(one, METRIC, **{LANG: lang, "deploy.transport": tr})
                    for lang in ("go", "java"))
        wilcoxon_p[tr] = float(stats.ranksums(go, java).pvalue)
    style, lang = percent["communication style"], percent["language"]
    verdict = "holds" if style > lang and style > 50 else "does not hold"
    return LanguageStyle(size, percent, kruskal_p, wilcoxon_p, verdict)


def compute(data: StudyData) -> S3:
    both = data.table()
    if LANG not in both.columns:
        both = both.assign(**{LANG: "go"})
    # The paper's Go claims are about the Go runs alone.
    df = cell(both, **{LANG: "go"})
    medians = {(tr, size): summarise(values(df, METRIC, **{"deploy.transport": tr,
                                                            "app.size": size}))
               for tr, _ in TRANSPORTS for size in SIZES}
    ratios = []
    for size, claim, above in S3_CLAIMS:
        r = ratio_of(values(df, METRIC, **{"deploy.transport": "http", "app.size": size}),
                     values(df, METRIC, **{"deploy.transport": "grpc", "app.size": size}))
        ratios.append(StyleRatio(size, claim, r, verdict(r.lo, r.hi, above)))
    allocation: dict[str, Allocation] = {}
    for size in SIZES:
        try:
            one = factorial(cell(df, **{"app.size": size}), METRIC, ["deploy.transport"],
                            confidence=CONFIDENCE)
            t = one.terms.set_index("term")
            style = float(t.loc["deploy.transport", "percent"])
            error = float(t.loc["Residual", "percent"])
        except AnalysisError:
            style = error = math.nan
        allocation[size] = Allocation(style, error,
                                      "inconclusive (not computed)" if not math.isfinite(style)
                                      else "holds" if style > 50 else "does not hold")
    fit: Factorial | None = None
    fit_error: str | None = None
    try:
        fit = factorial(df, METRIC, ["deploy.transport", "app.size"], log=True,
                        confidence=CONFIDENCE)
    except AnalysisError as exc:
        fit_error = str(exc)
    audits = {(tr, size): audit(data, cell(df, **{"deploy.transport": tr, "app.size": size}))
              for tr, _ in TRANSPORTS for size in SIZES}
    java_medians: dict[tuple[str, str], Summary] = {}
    styles: dict[str, LanguageStyle] = {}
    if len(cell(both, **{LANG: "java"})):
        java_medians = {(tr, size): summarise(values(both, METRIC, **{
            LANG: "java", "deploy.transport": tr, "app.size": size}))
            for tr, _ in TRANSPORTS for size in SIZES}
        for size in SIZES:
            # A cell without runs: the table says "not computed".
            with contextlib.suppress(AnalysisError, ValueError):
                styles[size] = language_style(both, size)
    return S3(data.closed_loop, medians, tuple(ratios), allocation, fit, fit_error, audits,
              java_medians, styles)


def render(r: S3) -> Section:
    """The region's Markdown (after the provenance) and the claims it tested."""
    shape = "back-to-back calls" if r.closed_loop else "open loop"
    claims: list[Claim] = []
    out = []
    out.append("**Median latency (ms).** Paper: the median (sd) of its requests. svclab: the "
               "mean over runs of each run's median, with a 95% Student-t interval over runs, "
               "and the runs' sd.")
    out.append("")
    rows = []
    for tr, label in TRANSPORTS:
        row = [label]
        for size in SIZES:
            med, sd = S3_PAPER[(label, size)]
            s = r.medians[(tr, size)]
            row += [f"{num(med * 1e3)} ({num(sd * 1e3)})",
                    f"{summary_cell(s)}, sd {num(s.sd)}, {count(s.n, 'run')}"]
        rows.append(row)
    for tr, _ in TRANSPORTS:
        label = "Java/" + STYLE_LABEL[tr]
        row = [label]
        for size in SIZES:
            med, sd = S3_PAPER[(label, size)]
            j = r.java_medians.get((tr, size))
            row += [f"{num(med * 1e3)} ({num(sd * 1e3)})",
                    f"{summary_cell(j)}, sd {num(j.sd)}, {count(j.n, 'run')}" if j is not None
                    else "not run (no Java runs in these results)"]
        rows.append(row)
    out.append(md_table(["implementation", "StdSize, paper", "StdSize, svclab",
                         "LargeSize, paper", "LargeSize, svclab"], rows))
    out.append("")

    out.append("**Which style wins.** REST ÷ gRPC: the paper's ratio of medians (Go), and "
               "svclab's ratio of the run medians with a 95% bootstrap interval over runs; p is "
               "Mann-Whitney U over runs (with 5 runs a side, the smallest possible p is 0.008).")
    out.append("")
    rows = []
    for w in r.ratios:
        paper = S3_PAPER_RATIO[w.size]
        claims.append(Claim("S3", f"{w.claim} ({shape})", w.verdict,
                            f"REST ÷ gRPC {ratio_cell(w.ratio)}", f"{num(paper)}×"))
        rows.append([SIZE_LABELS[w.size], f"{num(paper)}×", ratio_cell(w.ratio),
                     pval(w.ratio.p), w.claim, w.verdict])
    out.append(md_table(["size", "paper (Go)", "svclab", "p (runs)", "paper's claim",
                         "on this machine"], rows))
    out.append("")

    out.append("**Allocation of variation of the median latency, per size** (Jain ch. 18). The "
               "paper's 2²r design crosses language and style; this table is the Go runs' "
               "style alone (a 2¹r design per size), so its language rows are empty; the "
               "language × style table below is the paper's design.")
    out.append("")
    for i, size in enumerate(SIZES):
        a = r.allocation[size]
        claims.append(Claim(
            "S3", f"the style explains most of the variation, {size} ({shape})", a.verdict,
            f"{num(a.style)}%", f"{num(S3_PAPER_ALLOCATION['communication style'][i])}%"))
    rows = []
    for term, (p_std, p_large) in S3_PAPER_ALLOCATION.items():
        ours = [num(r.allocation[s].style) if term == "communication style" else
                num(r.allocation[s].error) if term == "error" else "—" for s in SIZES]
        rows.append([term, num(p_std), ours[0], num(p_large), ours[1]])
    out.append(md_table(["term", "StdSize, paper (%)", "StdSize, svclab (%)",
                         "LargeSize, paper (%)", "LargeSize, svclab (%)"], rows))
    out.append("")

    out.append("**Language × style, per size: S3's 2²r design** (Jain ch. 18, on the run "
               "medians as the paper did), beside the paper's allocation; p of Kruskal-Wallis "
               "over the four implementations and of the Wilcoxon rank-sum test of Go against "
               "Java per style, over runs.")
    out.append("")
    if r.language_style:
        rows = []
        for term, (p_std, p_large) in S3_PAPER_ALLOCATION.items():
            ours = [num(r.language_style[s].percent[term]) if s in r.language_style
                    else "not computed" for s in SIZES]
            rows.append([term, num(p_std), ours[0], num(p_large), ours[1]])
        tests: tuple[tuple[str, Callable[[LanguageStyle], float]], ...] = (
            ("Kruskal-Wallis p", lambda ls: ls.kruskal_p),
            ("Wilcoxon p, gRPC: Go vs Java", lambda ls: ls.wilcoxon_p["grpc"]),
            ("Wilcoxon p, REST: Go vs Java", lambda ls: ls.wilcoxon_p["http"]))
        for name, get in tests:
            ps = [pval(get(r.language_style[s])) if s in r.language_style else "—"
                  for s in SIZES]
            rows.append([name, "—", ps[0], "—", ps[1]])
        out.append(md_table(["term", "StdSize, paper (%)", "StdSize, svclab (%)",
                             "LargeSize, paper (%)", "LargeSize, svclab (%)"], rows))
        for i, size in enumerate(SIZES):
            if size in r.language_style:
                ls = r.language_style[size]
                claims.append(Claim(
                    "S3", f"the style matters more than the language, {size} ({shape})",
                    ls.verdict,
                    f"style {num(ls.percent['communication style'])}%, "
                    f"language {num(ls.percent['language'])}%",
                    f"style {num(S3_PAPER_ALLOCATION['communication style'][i])}%, "
                    f"language {num(S3_PAPER_ALLOCATION['language'][i])}%"))
    else:
        out.append("*Not computed: these results have no Java runs "
                   f"(`{LANG}` = \"java\").*")
    out.append("")

    out.append("**2²r over transport × size, on log(median latency)**: effects as ratios "
               "(+1 level ÷ −1 level) with 95% intervals, and each term's share of the variation.")
    out.append("")
    if r.fit is not None:
        rows = []
        for _, t in r.fit.terms.iterrows():
            if t["term"] == "Intercept":
                continue
            if t["term"] == "Residual":
                rows.append(["error (between runs)", "—", num(t["percent"])])
                continue
            rows.append([str(t["term"]), est(t["ratio"], t["ratio_low"], t["ratio_high"], "×"),
                         num(t["percent"])])
        coding = ", ".join(f"{c.name}: −1 = {c.low}, +1 = {c.high}" for c in r.fit.factors)
        out.append(md_table(["term", "ratio (95% CI)", "variation explained (%)"], rows))
        out.append("")
        out.append(f"*Coding: {coding}; r = {r.fit.replications}.*")
    else:
        out.append(f"*Not computed: {r.fit_error}.*")
    out.append("")

    out.append("**Cost per request and the generator's self-audit** (evidence for the "
               "differences): CPU of the system under test per request, from resources.parquet, "
               "and the median service time (from the actual send, so free of the generator's "
               "lateness), both as the mean over runs with a 95% interval; the generator's own "
               "CPU, the share of sends that left more than 1 ms late, the worst run's send lag "
               "p99, and the runs the self-audit flagged.")
    out.append("")
    rows = [[label, size, *audit_cells(r.audits[(tr, size)], r.closed_loop)]
            for tr, label in TRANSPORTS for size in SIZES]
    out.append(md_table(["implementation", "size", *AUDIT_HEADER], rows))
    out.append("")
    verdicts = {w.size: w.verdict for w in r.ratios}
    out.append("Verdicts, computed from the intervals: StdSize, *gRPC wins*: "
               f"**{verdicts['std']}**; LargeSize, *REST wins*: **{verdicts['large']}**.")
    return Section("\n".join(out), tuple(claims))


def section(data: StudyData) -> Section:
    return render(compute(data))
