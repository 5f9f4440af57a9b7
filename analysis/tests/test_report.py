"""The report on synthetic result directories in the docs/RESULTS.md layout."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import run_cli
from synth import make_results

from svclab_analysis.report import build_report
from svclab_analysis.report.document import _version

SECTIONS = ["The answer", "Design and environment", "Per-metric tables", "Plots",
            "Pairwise comparisons", "Warnings", "Methods"]


def section(md: str, title: str) -> str:
    start = md.index(f"## {title}\n")
    nxt = md.find("\n## ", start + 1)
    return md[start: nxt if nxt != -1 else len(md)]


def test_files_and_section_order(report_dir: Path) -> None:
    html = (report_dir / "report.html").read_text()
    md = (report_dir / "report.md").read_text()
    assert re.findall(r"<h2>(.*?)</h2>", html) == SECTIONS
    assert [ln[3:] for ln in md.splitlines() if ln.startswith("## ")] == SECTIONS
    for key in ("influence", "box", "cdf", "timeseries", "interactions", "qq"):
        assert (report_dir / "figures" / f"{key}.png").stat().st_size > 1000
        assert f"](figures/{key}.png)" in md
    # Self-contained: every image inlined, nothing fetched, no script.
    assert html.count('src="data:image/png;base64,') == 6
    assert not re.search(r'(src|href)="https?:', html)
    assert "<script" not in html


def test_answer_numbers(report_dir: Path) -> None:
    md = (report_dir / "report.md").read_text()
    answer = section(md, "The answer")
    # Best cell: p99 runs 1.9, 2.0, 2.1 ms -> geometric mean (1.9·2·2.1)^(1/3)
    # = 1.998 ms; the logs have mean 0.69231 and sd 0.05005, so the interval is
    # exp(0.69231 ± t(0.975; 2)·0.05005/√3) = exp(0.69231 ± 0.12434) -> 1.76–2.26 ms.
    assert "**transport=grpc · payload=small** has the lowest p99 latency: **2.00 ms**" \
        in answer
    assert "(geometric mean of 3 runs, 95% CI 1.76–2.26 ms)" in answer
    # Worst: grpc/large at 8.0 ms; by the ranking's centre, the ratio of geometric
    # means (7.9·8·8.1)^(1/3) / (1.9·2·2.1)^(1/3) = 7.9996 / 1.9983 = 4.00.
    assert "transport=grpc · payload=large, has 8.00 ms: its geometric mean is 4.00×" \
        in answer
    # Allocation of variation from cell means 2 (grpc,small), 4 (http,small),
    # 8 (grpc,large), 5 (http,large) with r = 3:
    #   q_transport = (-2 + 4 - 8 + 5)/4 = -0.25, q_payload = (-2 - 4 + 8 + 5)/4 = 1.75,
    #   q_AB = (2 - 4 - 8 + 5)/4 = -1.25; SS = 12 q^2 = 0.75, 36.75, 18.75;
    #   SSE = 4 cells * (0.01 + 0 + 0.01) = 0.08; SST = 56.33.
    # payload explains 36.75 / 56.33 = 65.2%.
    assert "**app.payload** explains 65.2% of the variation" in answer
    rows = [ln for ln in answer.splitlines() if ln.startswith("| ")]
    assert rows[0].startswith("| rank | transport | payload | geometric mean p99 (ms) | "
                              "95% CI (ms)")
    assert rows[1].startswith("| 1 | grpc | small | 2.00 | 1.76–2.26 | 2.00 | 1 (best) |")
    # 7.9, 8.0, 8.1 ms: exp(2.07939 ± 4.303·0.01250/√3) -> 7.755–8.252 ms.
    assert rows[4].startswith("| 4 | grpc | large | 8.00 | 7.75–8.25 | 8.00 | 4.00 (")
    # 36.75 may print as 36.7 or 36.8 depending on the last bit of the float.
    assert re.search(r"\| app\.payload \| 1\.75 \| 1\.68–1\.82 \| 36\.[78] \| 65\.2 \|", answer)
    assert "| deploy.transport | −0.250 | −0.317 to −0.183 | 0.750 | 1.33 |" in answer


def test_metric_tables_units_and_warnings(report_dir: Path) -> None:
    md = (report_dir / "report.md").read_text()
    metrics = section(md, "Per-metric tables")
    for heading in ("p50 latency (ms)", "p95 latency (ms)", "p99 latency (ms)",
                    "mean latency (ms)", "throughput (req/s)", "error rate (%)",
                    "CPU per 1000 requests (CPU·s/1000 req)"):
        assert f"### {heading}" in metrics
    cpu = metrics[metrics.index("### CPU per 1000"):]
    assert "| grpc | small | 3 | 5.00 | 5.00–5.00 |" in cpu
    # Jain: grpc/small has s = 0.1, x̄ = 2, t(0.975; 2) = 4.303:
    # (100 * 4.303 * 0.1 / (5 * 2))^2 = 18.5 -> 19 runs.
    assert "| grpc | small | 3 | 2.00 | 0.100 | 12.4 | 19 |" in metrics
    warnings = section(md, "Warnings")
    assert "1 of 13 runs failed" in warnings and "exited with status 2" in warnings
    assert "the load generator was the bottleneck" in warnings
    assert "generator_bottleneck: 12% of sends" in warnings
    assert "had errors" in warnings
    assert "Jain's estimate: 19 runs per configuration" in warnings
    pairwise = section(md, "Pairwise comparisons")
    assert "Kruskal-Wallis across all 4 configurations" in pairwise
    assert "Shapiro-Wilk on the 12 run residuals" in section(md, "Plots")
    assert "The run is the unit of replication" in section(md, "Methods")


def test_cli_report_prints_path(results_dir: Path, tmp_path: Path) -> None:
    r = run_cli("report", str(results_dir), "--out", str(tmp_path / "out"), "--metric",
                "p50_ms", "--log")
    assert r.returncode == 0, r.stderr
    path = Path(r.stdout.strip())
    assert path == (tmp_path / "out" / "report.html").resolve() and path.exists()
    md = (tmp_path / "out" / "report.md").read_text()
    assert "p50 latency (p50_ms) of operation 'total', analysed on the log scale" in md
    assert "high/low ratio (×)" in md


def test_three_level_factor_anova_and_subsets(tmp_path: Path) -> None:
    factors = [{"name": "mesh.setup", "letter": "A", "levels": ["default", "obs", "mtls"]},
               {"name": "app.payload", "letter": "B", "levels": ["small", "large"]}]
    p99 = {("default", "small"): 11.7, ("obs", "small"): 12.6, ("mtls", "small"): 11.9,
           ("default", "large"): 23.3, ("obs", "large"): 24.2, ("mtls", "large"): 22.2}
    root = make_results(tmp_path / "s2", factors=factors, p99=p99, failed_cell=None,
                        bottleneck_run=None, samples=False)
    build_report(root, operation="Echo")
    md = (root / "report.md").read_text()
    assert "### ANOVA (type II sums of squares)" in md
    assert "two-level subset (setup: default vs obs)" in md
    assert "two-level subset (setup: default vs mtls)" in md
    # Levels are compared through marginal means; only configurations, whose
    # runs are repeats, get Kruskal-Wallis.
    assert "### mesh.setup (marginal means over the other factors)" in md
    assert "Kruskal-Wallis across all 6 configurations" in md
    assert "Kruskal-Wallis H =" not in md
    # No samples.parquet and no HDR log: the CDF falls back to summary percentiles.
    assert (root / "figures" / "cdf.png").exists()
    assert "only from the percentiles in summary.json" in md


def test_single_configuration(tmp_path: Path) -> None:
    root = make_results(tmp_path / "one", factors=[{"name": "deploy.transport",
                                                    "letter": "A", "levels": ["grpc"]}],
                        p99={("grpc",): 3.0}, failed_cell=None, samples=False, hlog=True)
    build_report(root)
    md = (root / "report.md").read_text()
    assert "from the HDR histogram logs (latency.hlog)" in md
    assert ("One configuration, so nothing to rank: the p99 latency of **all runs** "
            "is **3.00 ms**") in md
    assert "has the lowest" not in md
    assert "no (one level: grpc)" in md
    assert "Nothing to compare" in md


def test_answer_reads_for_one_run_of_a_mean(tmp_path: Path) -> None:
    # One run per configuration has no interval, and mean latency is
    # already a mean: the answer says both plainly.
    root = make_results(tmp_path / "one-run", reps=1, failed_cell=None, samples=False)
    build_report(root, metric="mean")
    md = (root / "report.md").read_text()
    answer = md.split("## The answer", 1)[1].split("\n|", 1)[0]
    assert "has the lowest mean latency: **" in answer
    assert "(1 run, no interval)" in answer
    assert "mean mean" not in md
    assert "| mean (ms) |" in md


@pytest.mark.parametrize("metric", ["throughput_rps", "rps", "cpu_s_per_1k", "error_rate"])
def test_other_headline_metrics(results_dir: Path, tmp_path: Path, metric: str) -> None:
    build_report(results_dir, out=tmp_path, metric=metric)
    assert (tmp_path / "report.html").exists()


def test_answer_does_not_overclaim_noise(tmp_path: Path) -> None:
    # Cells 2.00/2.05 ms with runs ±0.1 ms: q_transport = 0.025 ms but
    # s_q = sqrt(0.08/8)/sqrt(12) = 0.0289 ms, so its 95% interval,
    # 0.025 ± 2.306 * 0.0289, includes 0.
    p99 = {("grpc", "small"): 2.0, ("http", "small"): 2.05,
           ("grpc", "large"): 2.0, ("http", "large"): 2.05}
    root = make_results(tmp_path / "noise", p99=p99, failed_cell=None, bottleneck_run=None,
                        samples=False)
    build_report(root)
    answer = section((root / "report.md").read_text(), "The answer")
    assert "**deploy.transport** explains" in answer
    assert "not distinguishable from run-to-run noise at 95% confidence" in answer


def test_configuration_with_no_ok_run(tmp_path: Path) -> None:
    root = make_results(tmp_path / "lost", samples=False)
    for run in (root / "runs").iterdir():
        rj = run / "run.json"
        if not rj.exists():
            continue
        meta = json.loads(rj.read_text())
        if meta["levels"] == {"deploy.transport": "http", "app.payload": "large"}:
            meta.update(status="failed", reason="deploy failed")
            rj.write_text(json.dumps(meta))
    build_report(root)
    md = (root / "report.md").read_text()
    assert "transport=http · payload=large: no run finished ok" in md
    assert "main effects only" in md


def test_host_timer_line(tmp_path: Path) -> None:
    root = make_results(tmp_path / "ht", factors=[{"name": "deploy.transport",
                                                   "letter": "A", "levels": ["grpc"]}],
                        p99={("grpc",): 3.0}, failed_cell=None, samples=False, hlog=True)
    meta = json.loads((root / "experiment.json").read_text())
    meta["host_timer"] = {"method": "timerfd", "samples": 3100, "p50_ms": 0.061,
                          "p99_ms": 0.412, "p999_ms": 1.37, "max_ms": 2.5}
    (root / "experiment.json").write_text(json.dumps(meta))
    build_report(root)
    env = section((root / "report.md").read_text(), "Design and environment")
    assert "Host timer (timerfd, 3100 wake-ups)" in env
    assert "p99 0.412 ms" in env and "p99.9 1.37 ms" in env and "max 2.50 ms" in env


def test_isolation_line(tmp_path: Path) -> None:
    root = make_results(tmp_path / "iso", factors=[{"name": "deploy.transport",
                                                    "letter": "A", "levels": ["grpc"]}],
                        p99={("grpc",): 3.0}, failed_cell=None, samples=False, hlog=True)
    exp = next(p for p in root.iterdir() if (p / "experiment.json").exists()) \
        if not (root / "experiment.json").exists() else root
    meta = json.loads((exp / "experiment.json").read_text())
    meta["isolation"] = {"mode": "cpuset", "loadgen_cpus": "0", "sut_cpus": "1-3",
                         "loadgen_cores": 1, "sut_cores": 3, "cgroup": "v1"}
    (exp / "experiment.json").write_text(json.dumps(meta))
    build_report(root)
    env = section((root / "report.md").read_text(), "Design and environment")
    assert ("CPU isolation: cpuset, cgroup v1; the load generator had 1 core (CPU 0), "
            "the system under test 3 cores (CPU 1-3), disjoint.") in env
    meta["isolation"] = {"mode": "none", "reason": "cgroups unavailable", "loadgen_cpus": "0-1",
                         "sut_cpus": "0-1", "loadgen_cores": 2, "sut_cores": 2}
    (exp / "experiment.json").write_text(json.dumps(meta))
    build_report(root)
    env = section((root / "report.md").read_text(), "Design and environment")
    assert ("CPU isolation: none (cgroups unavailable); the load generator and the system "
            "under test shared 2 cores (CPU 0-1).") in env
    meta["isolation"] = {"mode": "none", "reason": "the kube deployer's pods run where the "
                         "cluster places them", "loadgen_cpus": "", "sut_cpus": "",
                         "loadgen_cores": 0, "sut_cores": 0}
    (exp / "experiment.json").write_text(json.dumps(meta))
    build_report(root)
    env = section((root / "report.md").read_text(), "Design and environment")
    assert "CPU isolation: none (the kube deployer's pods run where the cluster places them)." \
        in env and "shared" not in env.split("CPU isolation")[1].split("\n")[0]


def test_answer_cautions_when_the_generator_fell_behind() -> None:
    from svclab_analysis.report.document import generator_caution

    runs = pd.DataFrame({"status": ["ok", "ok", "ok", "failed"],
                         "bottleneck": [True, False, True, True]})
    text = generator_caution(runs)
    assert "fell behind in 2 of 3 runs" in text
    assert generator_caution(runs.assign(bottleneck=False)) == ""
    assert generator_caution(runs.drop(columns="bottleneck")) == ""
    assert "experiment.isolation" in text
    isolated = generator_caution(runs, isolated=True)
    assert "fell behind in 2 of 3 runs" in isolated
    assert "experiment.isolation" not in isolated and "CPUs of its own already" in isolated


def _anova_r1(root: Path, factors: list[dict[str, Any]],
              p99: dict[tuple[Any, ...], float] | None = None) -> str:
    p99 = p99 or {cell: 10.0 + i * 0.7 + (i % 3) * 0.3 for i, cell in
                  enumerate(itertools.product(*[f["levels"] for f in factors]))}
    d = make_results(root, factors=factors, p99=p99, reps=1, failed_cell=None,
                     bottleneck_run=None, samples=False)
    build_report(d)
    return (d / "report.md").read_text()


def test_no_test_without_replication_multi_level(tmp_path: Path) -> None:
    # One run per configuration of a 3×3 design: the additive model leaves
    # 4 degrees of freedom, but they are the interaction, not run-to-run
    # noise, so no F, no p and no "not distinguishable" claim.
    md = _anova_r1(tmp_path / "r1", [
        {"name": "deploy.transport", "letter": "A", "levels": ["grpc", "http", "tcp"]},
        {"name": "load.rate", "letter": "B", "levels": [10, 50, 100]}])
    answer = section(md, "The answer")
    assert "not distinguishable" not in md
    assert answer.count("No error term") == 1
    assert "`experiment.repetitions` ≥ 2" in answer
    anova = answer.split("### ANOVA", 1)[1].split("\n\n", 2)[1]
    for row in anova.splitlines()[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[3] == "—" and cells[4] == "—", row  # F and p
    pw = section(md, "Pairwise comparisons")
    assert "Kruskal" not in pw and "Mann-Whitney" not in pw and "No test" in pw
    # A dominant interaction takes the residual's row at r = 1: it is not
    # run-to-run noise, and the headline must not call it that.
    factors = [{"name": "deploy.transport", "letter": "A", "levels": ["grpc", "http", "tcp"]},
               {"name": "load.rate", "letter": "B", "levels": [10, 50, 100]}]
    swirl = {(t, r): 10.0 + 5.0 * ((i + j) % 3) + 0.1 * i
             for i, t in enumerate(["grpc", "http", "tcp"])
             for j, r in enumerate([10, 50, 100])}
    md = _anova_r1(tmp_path / "swirl", factors, swirl)
    assert "noise outweighs" not in section(md, "The answer")


def test_one_factor_without_replication_claims_no_share(tmp_path: Path) -> None:
    md = _anova_r1(tmp_path / "one", [
        {"name": "deploy.transport", "letter": "A", "levels": ["grpc", "http", "tcp"]}])
    answer = section(md, "The answer")
    assert "explains" not in answer
    assert "100" not in answer.split("\n|", 1)[0]
    assert "share of the variation is not meaningful" in answer
    assert "all of it is the factor's by construction" in answer  # the ANOVA's caption
    md2 = _anova_r1(tmp_path / "two", [
        {"name": "deploy.transport", "letter": "A", "levels": ["grpc", "http"]}])
    assert "explains" not in section(md2, "The answer")


def test_pairwise_does_not_pool_configurations(tmp_path: Path) -> None:
    # Two factors: a factor's runs at one level are different configurations,
    # so no per-factor Mann-Whitney pools them as repeats.
    root = make_results(tmp_path / "pool", failed_cell=None, bottleneck_run=None,
                        samples=False)
    build_report(root)
    pw = section((root / "report.md").read_text(), "Pairwise comparisons")
    assert "pooled over the other factors" not in pw
    assert "marginal mean" in pw


def test_load_factor_is_not_a_choice(tmp_path: Path) -> None:
    """A design over the load alone ranks conditions, not choices: the
    answer says so; a design with a system factor does not."""
    root = make_results(tmp_path / "rate", factors=[{"name": "load.rate", "letter": "A",
                                                     "levels": [20, 80]}],
                        p99={(20,): 2.0, (80,): 3.0}, failed_cell=None)
    build_report(root)
    md = (root / "report.md").read_text()
    assert "Every factor (load.rate) sets the load, not the system" in md
    root = make_results(tmp_path / "tr", factors=[{"name": "deploy.transport", "letter": "A",
                                                   "levels": ["grpc", "http"]}],
                        p99={("grpc",): 2.0, ("http",): 3.0}, failed_cell=None)
    build_report(root)
    assert "sets the load, not the system" not in (root / "report.md").read_text()


@pytest.mark.parametrize(
    ("version", "commit", "want"),
    [
        ("v1.2.0", "c55a1aa", "v1.2.0 (c55a1aa)"),
        ("c55a1aa", "c55a1aa", "c55a1aa"),
        ("v1.2.0", "", "v1.2.0"),
        ("", "", "—"),
    ],
)
def test_version_names_the_commit_once(version: str, commit: str, want: str) -> None:
    """A build of a bare commit is named by it once, not "c55a1aa (c55a1aa)"."""
    assert _version({"svclab_version": version, "svclab_commit": commit}) == want
