"""Each study's compute on small hand-made DataFrames, checked against values
derived here by hand (group means, sums of squares) or with scipy.

No results directory is written: a StudyData is built from plain rows, so
these tests reach compute and render without any I/O. Where an interval comes
from a bootstrap, the test bounds it by hand instead of reproducing it: when
every value of one side exceeds every value of the other, every resampled
ratio of medians lies between min(a)/max(b) and max(a)/min(b).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from svclab_analysis.replications import s0, s2, s3, s4
from svclab_analysis.replications.common import (
    Audit,
    Ratio,
    StudyData,
    Summary,
    audit_cells,
    mean_or_nan,
)

COUNT = 1000  # requests per run
DURATION = 10.0  # seconds per run
CPU_S = 5.0  # CPU seconds of the system under test per run

Metrics = Callable[[dict[str, str], int], dict[str, dict[str, float]]]


def study(factors: dict[str, list[Any]], reps: int, metrics: Metrics,
          bottleneck: Callable[[dict[str, str], int], bool] = lambda lv, rep: False,
          closed_loop: bool = False, cores: int = 2) -> StudyData:
    """A StudyData with one run per cell and repetition; `metrics` gives each
    run's metric values per operation. Run `rep` sent `rep` requests late, its
    generator used 10 + rep % CPU and lagged `rep` ms at p99."""
    names = list(factors)
    runs: list[dict[str, Any]] = []
    tables: dict[str, list[dict[str, Any]]] = {}
    for rep in range(1, reps + 1):
        for levels in itertools.product(*factors.values()):
            lv = {n: str(v) for n, v in zip(names, levels, strict=True)}
            run_id = f"r{len(runs) + 1:03d}"
            runs.append({"run_id": run_id, "bottleneck": bottleneck(lv, rep),
                         "duration_s": DURATION, "late_sends": rep,
                         "gen_cpu_percent": 10.0 + rep, "gen_lag_p99_ms": float(rep)})
            for op, values in metrics(lv, rep).items():
                tables.setdefault(op, []).append(
                    {"run_id": run_id, **lv, "count": COUNT, "cpu_s": CPU_S,
                     "cpu_s_per_1k": 1000.0 * CPU_S / COUNT, "throughput_rps": COUNT / DURATION,
                     "service_p50_ms": 1.0 + rep, **values})
    return StudyData(tables={op: pd.DataFrame(rows) for op, rows in tables.items()},
                     runs=pd.DataFrame(runs),
                     factors={n: [str(v) for v in lv] for n, lv in factors.items()},
                     closed_loop=closed_loop, cores=cores)


def t_summary(x: list[float]) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval, from scipy."""
    a = np.array(x)
    lo, hi = stats.t.interval(0.95, len(a) - 1, loc=a.mean(), scale=stats.sem(a))
    return float(a.mean()), float(lo), float(hi)


def assert_summary(s: Summary, x: list[float]) -> None:
    mean, lo, hi = t_summary(x)
    assert s.n == len(x)
    assert (s.mean, s.lo, s.hi) == pytest.approx((mean, lo, hi))
    assert s.sd == pytest.approx(float(np.std(x, ddof=1)))


def assert_separated_ratio(r: Ratio, a: list[float], b: list[float]) -> None:
    """median(a)/median(b), with a bootstrap interval within the hand bounds."""
    assert r.ratio == pytest.approx(float(np.median(a) / np.median(b)))
    assert min(a) / max(b) - 1e-12 <= r.lo <= r.ratio <= r.hi <= max(a) / min(b) + 1e-12
    assert r.p == pytest.approx(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)


def share(groups: list[np.ndarray], everything: np.ndarray) -> float:
    """A balanced factor's share (%) of the total sum of squares."""
    grand = everything.mean()
    ss = sum(len(g) * (g.mean() - grand) ** 2 for g in groups)
    return float(100 * ss / ((everything - grand) ** 2).sum())


# ---------------------------------------------------------------- S3

S3_P50 = {("grpc", "std"): [1.0, 1.2, 1.1], ("http", "std"): [2.0, 2.6, 2.3],
          ("grpc", "large"): [9.0, 9.5, 10.0], ("http", "large"): [4.0, 4.5, 5.0]}


def s3_data(closed_loop: bool = False) -> StudyData:
    return study({"deploy.transport": ["grpc", "http"], "app.size": ["std", "large"]}, 3,
                 lambda lv, rep: {"total": {"p50_ms": S3_P50[(lv["deploy.transport"],
                                                               lv["app.size"])][rep - 1]}},
                 bottleneck=lambda lv, rep: (lv["deploy.transport"], lv["app.size"], rep)
                 == ("http", "large", 2),
                 closed_loop=closed_loop)


def test_s3_compute() -> None:
    r = s3.compute(s3_data())
    for key, x in S3_P50.items():
        assert_summary(r.medians[key], x)
    std, large = r.ratios
    assert (std.size, large.size) == ("std", "large")
    # REST ÷ gRPC: 2.3/1.1 at StdSize (every REST run slower: gRPC wins),
    # 4.5/9.5 at LargeSize (every REST run faster: REST wins).
    assert_separated_ratio(std.ratio, S3_P50[("http", "std")], S3_P50[("grpc", "std")])
    assert_separated_ratio(large.ratio, S3_P50[("http", "large")], S3_P50[("grpc", "large")])
    assert std.verdict == "holds" and large.verdict == "holds"
    # With three runs a side and no overlap, the exact two-sided p is 2/C(6,3) = 0.1.
    assert std.ratio.p == pytest.approx(0.1)
    for size in ("std", "large"):
        g, h = np.array(S3_P50[("grpc", size)]), np.array(S3_P50[("http", size)])
        want = share([g, h], np.concatenate([g, h]))
        alloc = r.allocation[size]
        assert alloc.style == pytest.approx(want)
        assert alloc.error == pytest.approx(100 - want)
        assert alloc.verdict == ("holds" if want > 50 else "does not hold")
    # 2²r on log(p50): the transport's ratio (+1 ÷ −1) is the ratio of geometric means.
    assert r.fit is not None and r.fit_error is None
    coding = {c.name: c for c in r.fit.factors}["deploy.transport"]
    logs = {tr: np.log(S3_P50[(tr, "std")] + S3_P50[(tr, "large")]) for tr in ("grpc", "http")}
    want_ratio = math.exp(logs[coding.high].mean() - logs[coding.low].mean())
    term = r.fit.terms.set_index("term").loc["deploy.transport"]
    assert term["ratio"] == pytest.approx(want_ratio)
    # The self-audit: generator CPU 10 + rep, rep late sends of 1,000, lag rep ms.
    a = r.audits[("http", "large")]
    assert a.cpu_ms.mean == pytest.approx(1000 * CPU_S / COUNT)
    assert_summary(a.service_p50, [2.0, 3.0, 4.0])
    assert a.generator_cpu == pytest.approx(12.0)
    assert a.late_pct == pytest.approx(100 * 2 / COUNT)
    assert a.lag_p99 == 3.0
    assert (a.flagged, a.runs) == (1, 3)
    assert r.audits[("grpc", "std")].flagged == 0
    assert not r.closed_loop


def test_s3_render_returns_its_claims() -> None:
    r = s3.compute(s3_data(closed_loop=True))
    section = s3.render(r)
    assert section == s3.render(r)  # nothing is carried over between calls
    assert [c.claim for c in section.claims] == [
        "gRPC wins small requests (back-to-back calls)",
        "REST wins large requests (back-to-back calls)",
        "the style explains most of the variation, std (back-to-back calls)",
        "the style explains most of the variation, large (back-to-back calls)",
    ]
    assert [c.verdict for c in section.claims[:2]] == ["holds", "holds"]
    # In a closed loop "late" has another meaning: the audit says so instead of a number.
    assert "| Go/gRPC | std | 5.00 (5.00–5.00) |" in section.text
    assert "| n/a (closed loop) | n/a (closed loop) | 0 of 3 |" in section.text


# ---------------------------------------------------------------- S4


def s4_metrics(lv: dict[str, str], rep: int) -> dict[str, dict[str, float]]:
    grpc = lv["deploy.transport"] == "grpc"
    n = int(lv["app.string_len"])
    return {"void": {"mean_ms": (0.80 if grpc else 0.40) + 0.01 * rep},
            "string": {"mean_ms": (1.0 if grpc else 0.5) + n / 1000 + 0.01 * rep}}


def test_s4_compute() -> None:
    data = study({"deploy.transport": ["grpc", "netrpc"], "app.string_len": [2, 1024]}, 3,
                 s4_metrics, bottleneck=lambda lv, rep: rep == 3 and lv["app.string_len"] == "2")
    r = s4.compute(data)
    assert [o.label for o in r.rows] == ["void", "string, 2 chars", "string, 1024 chars",
                                         "string, all lengths pooled"]
    void = r.rows[0]
    # void does not depend on the string length: six runs a transport.
    assert_summary(void.grpc, [0.81, 0.82, 0.83] * 2)
    assert_summary(void.netrpc, [0.41, 0.42, 0.43] * 2)
    assert void.ratio.ratio == pytest.approx(0.82 / 0.42)
    s1024 = r.rows[2]
    assert_summary(s1024.grpc, [2.034, 2.044, 2.054])
    assert_separated_ratio(s1024.ratio, [2.034, 2.044, 2.054], [1.534, 1.544, 1.554])
    # The range leaves out the pooled row: void, 2 and 1024 chars.
    ratios = [0.82 / 0.42, 1.022 / 0.522, 2.044 / 1.544]
    assert r.ratio_range == pytest.approx((min(ratios), max(ratios)))
    assert r.verdict == "holds for every operation"
    # string_len explains nothing of void; of string, SS_len / SS_total with the
    # cell means 0.511 ms from the grand mean along string_len, 0.25 along transport.
    shares = {s.operation: s for s in r.shares}
    assert shares["void"].percent == pytest.approx(0, abs=1e-9)
    ss_len, ss_tr, ss_err = 12 * 0.511**2, 12 * 0.25**2, 4 * 0.0002
    assert shares["string"].percent == pytest.approx(100 * ss_len / (ss_len + ss_tr + ss_err))
    assert shares["string"].p < 1e-4 and shares["string"].error is None
    # Jain: n = (100·t·s / (5·x̄))², at least 2, for string, 2 chars, grpc.
    x = np.array([1.012, 1.022, 1.032])
    need = max(2, math.ceil((100 * stats.t.ppf(0.975, 2) * x.std(ddof=1) / (5 * x.mean())) ** 2))
    assert r.jain is not None
    row = r.jain[(r.jain["operation"] == "string, 2 chars")
                 & (r.jain["deploy.transport"] == "grpc")].iloc[0]
    assert (int(row["n"]), int(row["required"])) == (3, need)
    assert row["cv"] == pytest.approx(100 * x.std(ddof=1) / x.mean())
    assert (r.flagged, r.runs) == (2, 12)


def test_s4_without_intervals_has_no_verdict() -> None:
    # One run a side: ratios, but no interval to judge the claim by.
    data = study({"deploy.transport": ["grpc", "netrpc"]}, 1,
                 lambda lv, rep: {"void": {"mean_ms": 2.0 if lv["deploy.transport"] == "grpc"
                                           else 1.0}})
    r = s4.compute(data)
    assert r.rows[0].ratio.ratio == pytest.approx(2.0)
    assert math.isnan(r.rows[0].ratio.lo)
    assert r.ratio_range is None and r.verdict is None and r.shares == ()
    assert s4.render(r).claims == ()


def test_s4_render_returns_its_claim() -> None:
    data = study({"deploy.transport": ["grpc", "netrpc"], "app.string_len": [2, 1024]}, 3,
                 s4_metrics)
    section = s4.render(s4.compute(data))
    (claim,) = section.claims
    assert (claim.study, claim.verdict) == ("S4", "holds for every operation")
    assert claim.paper == s4.PAPER_RATIO


# ---------------------------------------------------------------- S2


def s2_metrics(lv: dict[str, str], rep: int) -> dict[str, dict[str, float]]:
    base = {"small": 2.0, "large": 10.0}[lv["app.payload"]]
    if lv["deploy.transport"] == "http":
        base *= 2
    if lv["load.rate"] == "100" and lv["app.payload"] == "large":
        base *= 3  # slower at the higher rate
    return {"total": {"mean_ms": base + 0.1 * rep}}


def s2_values(rate: str, payload: str, tr: str) -> list[float]:
    return [s2_metrics({"load.rate": rate, "app.payload": payload, "deploy.transport": tr},
                       rep)["total"]["mean_ms"] for rep in (1, 2, 3)]


def test_s2_compute() -> None:
    data = study({"load.rate": [10, 100], "app.payload": ["small", "large"],
                  "deploy.transport": ["grpc", "http"]}, 3, s2_metrics)
    r = s2.compute(data)
    assert (r.rates, r.payloads, r.transports) == (("10", "100"), ("small", "large"),
                                                   ("grpc", "http"))
    for rate, payload, tr in itertools.product(r.rates, r.payloads, r.transports):
        assert_summary(r.means[(rate, payload, tr)], s2_values(rate, payload, tr))
    # large ÷ small per transport and rate; every large run is slower: holds.
    assert [(x.transport, x.level) for x in r.payload_ratios] == [
        ("grpc", "10"), ("grpc", "100"), ("http", "10"), ("http", "100")]
    for x in r.payload_ratios:
        rate = x.level
        assert (x.top, x.bottom) == ("large", "small")
        assert_separated_ratio(x.ratio, s2_values(rate, "large", x.transport),
                               s2_values(rate, "small", x.transport))
        assert x.verdict == "holds"
        assert x.paper == pytest.approx({"10": 23.3 / 11.7, "100": 18.2 / 10.7}[rate])
    assert r.payload_verdict == "holds"
    want = [np.median(s2_values(rate, "large", tr)) / np.median(s2_values(rate, "small", tr))
            for tr in r.transports for rate in r.rates]
    assert r.payload_range == pytest.approx((min(want), max(want)))
    # 100 ÷ 10 req/s: unchanged for small (holds), three times slower for large.
    verdicts = {(x.transport, x.level): x.verdict for x in r.rate_ratios}
    assert verdicts == {("grpc", "small"): "holds",
                        ("grpc", "large"): "does not hold (slower at the higher rate)",
                        ("http", "small"): "holds",
                        ("http", "large"): "does not hold (slower at the higher rate)"}
    assert r.rate_verdict == "holds in 2 of 4 cells, does not hold in 2"
    small = next(x for x in r.rate_ratios if (x.transport, x.level) == ("grpc", "small"))
    assert (small.top, small.bottom) == ("100", "10")
    assert small.ratio.ratio == pytest.approx(1.0)
    assert small.paper == pytest.approx(10.7 / 11.7)
    # 2³r on the linear scale: q = half the difference of the level means, and
    # a main effect's share is N·q² over the total sum of squares.
    assert r.factors == ("load.rate", "app.payload", "deploy.transport")
    assert r.fit is not None and r.fit_error is None
    df = data.table()
    y = df["mean_ms"].to_numpy()
    coding = {c.name: c for c in r.fit.factors}["app.payload"]
    q = (y[df["app.payload"] == coding.high].mean() - y[df["app.payload"] == coding.low].mean()) / 2
    term = r.fit.terms.set_index("term").loc["app.payload"]
    assert term["effect"] == pytest.approx(q)
    assert term["percent"] == pytest.approx(100 * len(y) * q**2 / ((y - y.mean()) ** 2).sum())
    assert set(r.audits) == set(r.means)
    assert r.audits[("100", "large", "http")].generator_cpu == pytest.approx(12.0)


def test_s2_one_rate_and_payload_tests_no_claim() -> None:
    data = study({"load.rate": [10], "app.payload": ["small"], "deploy.transport": ["grpc"]}, 2,
                 s2_metrics)
    r = s2.compute(data)
    assert r.payload_ratios == () and r.rate_ratios == ()
    assert r.payload_verdict == r.rate_verdict == "not tested"
    assert r.payload_range is None and r.rate_range is None
    # A factor with one level cannot be fitted: the reason is kept for the region.
    assert r.fit is None and r.fit_error
    assert s2.render(r).claims == ()
    assert f"*Not computed: {r.fit_error}.*" in s2.render(r).text


# ---------------------------------------------------------------- S0

S0_BASE = {("monolith", "10"): 2.0, ("monolith", "100"): 3.0,
           ("split", "10"): 6.0, ("split", "100"): 24.0}


def s0_metrics(lv: dict[str, str], rep: int) -> dict[str, dict[str, float]]:
    p95 = S0_BASE[(lv["deploy.placement"], lv["load.users"])] * (1 + 0.02 * rep)
    if lv.get("deploy.transport") == "protorpc":
        p95 /= 10  # must not be pooled with grpc's runs
    return {"total": {"p95_ms": p95}}


def s0_values(pl: str, u: str) -> list[float]:
    return [S0_BASE[(pl, u)] * (1 + 0.02 * rep) for rep in (1, 2, 3)]


def test_s0_compute() -> None:
    data = study({"deploy.placement": ["monolith", "split"], "load.users": [10, 100],
                  "deploy.transport": ["grpc", "protorpc"]}, 3, s0_metrics,
                 bottleneck=lambda lv, rep: rep == 1, cores=4)
    r = s0.compute(data)
    assert (r.placements, r.users, r.cores) == (("monolith", "split"), ("10", "100"), 4)
    for (pl, u), c in r.p95.items():
        assert_summary(c.summary, s0_values(pl, u))  # grpc's three runs only
        assert c.median == pytest.approx(float(np.median(s0_values(pl, u))))
    (low, high) = r.versus["split"]
    assert_separated_ratio(low.ratio, s0_values("split", "10"), s0_values("monolith", "10"))
    assert high.ratio.ratio == pytest.approx(8.0)
    a, b = np.array(s0_values("split", "100")), np.array(s0_values("monolith", "100"))
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (high.difference.diff, high.difference.lo, high.difference.hi) == pytest.approx(
        (a.mean() - b.mean(), ci.low, ci.high))
    # split ÷ monolith is at least 6·1.02 / (2·1.06) = 2.9 at 10 users, above the
    # paper's 8/6; at 100 users at least 7.7, above the 10-user interval's top (≤ 3.1).
    assert r.finest == "split"
    assert r.low_verdict == "does not hold (larger)"
    assert r.grow_verdict == "holds"
    # ANOVA on log(p95), balanced: each main effect's SS from its level means.
    assert r.anova is not None and r.anova_error is None
    df = data.table()
    df = df[df["deploy.transport"] == "grpc"]
    y = np.log(df["p95_ms"].to_numpy())
    t = r.anova.set_index("term")
    for f in ("deploy.placement", "load.users"):
        groups = [y[(df[f] == v).to_numpy()] for v in df[f].unique()]
        assert t.loc[f, "percent"] == pytest.approx(share(groups, y))
        assert t.loc[f, "df"] == 1
    assert t["percent"].sum() == pytest.approx(100)
    # Load and cost: 5 CPU-s over 10 s is 50% of one core.
    x = r.load[("split", "100")]
    assert x.throughput.mean == pytest.approx(COUNT / DURATION)
    assert x.system_cpu == pytest.approx(100 * CPU_S / DURATION)
    assert x.generator_cpu == pytest.approx(12.0)
    assert (x.flagged, x.runs) == (1, 3)


def test_s0_without_monolith_tests_no_claim() -> None:
    data = study({"deploy.placement": ["two", "split"], "load.users": [10]}, 2,
                 lambda lv, rep: {"total": {"p95_ms": 5.0 + rep}})
    r = s0.compute(data)
    assert r.versus == {} and r.finest is None
    assert r.low_verdict == r.grow_verdict == ""
    assert s0.render(r).claims == ()


def ratio(lo: float, hi: float) -> Ratio:
    return Ratio((lo + hi) / 2, lo, hi, math.nan)


@pytest.mark.parametrize(("first", "want"), [
    (ratio(1.0, 1.2), "holds"),
    (ratio(8 / 6 + 0.01, 2.0), "does not hold (larger)"),
    (ratio(math.nan, math.nan), "inconclusive (no interval)"),
])
def test_s0_low_load_verdict(first: Ratio, want: str) -> None:
    assert s0.low_load_verdict(first) == want


@pytest.mark.parametrize(("first", "last", "want"), [
    (ratio(1.0, 1.5), ratio(2.0, 3.0), "holds"),
    (ratio(0.5, 0.8), ratio(0.9, 0.95), "inconclusive (the intervals overlap)"),  # below 1
    (ratio(2.0, 3.0), ratio(1.0, 1.5), "does not hold (shrinks)"),
    (ratio(1.0, 2.0), ratio(1.5, 3.0), "inconclusive (the intervals overlap)"),
    (ratio(1.0, 2.0), ratio(math.nan, math.nan), "inconclusive (no interval)"),
])
def test_s0_growth_verdict(first: Ratio, last: Ratio, want: str) -> None:
    assert s0.growth_verdict(first, last) == want


# ---------------------------------------------------------------- common


def test_mean_or_nan() -> None:
    assert mean_or_nan([1.0, math.nan, 3.0]) == 2.0
    assert math.isnan(mean_or_nan([]))
    assert math.isnan(mean_or_nan([math.nan]))


def test_audit_cells() -> None:
    s = Summary(3, 5.0, 4.0, 6.0, 0.5)
    a = Audit(s, s, 12.0, 0.2, math.nan, 1, 3)
    assert audit_cells(a, False) == ["5.00 (4.00–6.00)", "5.00 (4.00–6.00)", "12.0", "0.200",
                                     "—", "1 of 3"]
    assert audit_cells(a, True)[3:5] == ["n/a (closed loop)"] * 2


# ------------------------------------------------ S3 with language (2²r)

S3_LANG_P50 = {("go", "grpc", "std"): [1.0, 1.2, 1.1], ("go", "http", "std"): [3.0, 3.4, 3.2],
               ("java", "grpc", "std"): [1.5, 1.4, 1.9], ("java", "http", "std"): [3.1, 3.6, 3.3],
               ("go", "grpc", "large"): [9.0, 9.5, 10.0], ("go", "http", "large"): [4.0, 4.5, 5.0],
               ("java", "grpc", "large"): [9.9, 9.2, 10.4],
               ("java", "http", "large"): [4.4, 4.3, 5.6]}


def s3_lang_data() -> StudyData:
    return study({s3.LANG: ["go", "java"], "deploy.transport": ["grpc", "http"],
                  "app.size": ["std", "large"]}, 3,
                 lambda lv, rep: {"total": {"p50_ms": S3_LANG_P50[(
                     lv[s3.LANG], lv["deploy.transport"], lv["app.size"])][rep - 1]}})


def test_s3_language_style() -> None:
    r = s3.compute(s3_lang_data())
    # The Go claims see the Go runs alone.
    for (lang, tr, size), x in S3_LANG_P50.items():
        assert_summary((r.medians if lang == "go" else r.java_medians)[(tr, size)], x)
    for size in ("std", "large"):
        ls = r.language_style[size]
        y = {(lang, tr): np.array(S3_LANG_P50[(lang, tr, size)])
             for lang in ("go", "java") for tr in ("grpc", "http")}
        # Jain's 2²r by hand: effects from the cell means, SSx = 4r·q², SST about the mean.
        m = {k: v.mean() for k, v in y.items()}
        n_r = 3
        gg, gh, jg, jh = (m[("go", "grpc")], m[("go", "http")],
                          m[("java", "grpc")], m[("java", "http")])
        q_lang = (jg + jh - gg - gh) / 4
        q_style = (gh + jh - gg - jg) / 4
        q_int = (gg + jh - gh - jg) / 4
        everything = np.concatenate(list(y.values()))
        sst = ((everything - everything.mean()) ** 2).sum()
        sse = sum(((v - v.mean()) ** 2).sum() for v in y.values())
        want = {"language": 4 * n_r * q_lang ** 2, "communication style": 4 * n_r * q_style ** 2,
                "interaction": 4 * n_r * q_int ** 2, "error": sse}
        for term, ss in want.items():
            assert ls.percent[term] == pytest.approx(100 * ss / sst), (size, term)
        assert sum(ls.percent.values()) == pytest.approx(100)
        assert ls.kruskal_p == pytest.approx(stats.kruskal(*y.values()).pvalue)
        for tr in ("grpc", "http"):
            assert ls.wilcoxon_p[tr] == pytest.approx(
                stats.ranksums(y[("go", tr)], y[("java", tr)]).pvalue)
        assert ls.verdict == "holds"  # the style dominates in both sizes of this data
    section = s3.render(r)
    assert "Java/gRPC" in section.text and "not run" not in section.text
    assert [c.claim for c in section.claims if "than the language" in c.claim] == [
        "the style matters more than the language, std (open loop)",
        "the style matters more than the language, large (open loop)"]


def test_s3_without_java_says_so() -> None:
    r = s3.compute(s3_data())
    assert r.java_medians == {} and r.language_style == {}
    assert "no Java runs" in s3.render(r).text
