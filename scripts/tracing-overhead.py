"""Tracing's cost to a three-hop chain's median, and the backend's share.

    bin/svclab run experiments/tracing-overhead.toml
    .venv/bin/python scripts/tracing-overhead.py PATH

PATH is a tracing-overhead results directory, or a directory of results
(then the newest tracing-overhead set in it). For each placement of the
tracing backend (deploy.telemetry_cpus), the runs traced at 1.0 against
the runs not traced, on each run's p50:

- unpaired: the ratio of medians with a 95% bootstrap interval and
  Mann-Whitney's p (svclab_analysis.stats.mann_whitney), over every run;
- blocked: the experiment interleaves its cells, so each repetition is a
  block that met one stretch of the machine's drift. Within a block the
  traced run is divided by the mean of that block's untraced runs; the
  median of those ratios gets an order-statistic interval, and Wilcoxon's
  signed-rank test asks whether the ratios lie below the 1.05 bound. It
  needs at least six repetitions.

It also prints the hosts' CPU per request and, per cell, how many runs
carry each kind of self-audit warning (generator_lag, host_late, ...).
"""
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from svclab_analysis.formatting import est, num
from svclab_analysis.replications.store import latest_results
from svclab_analysis.results import RunWarning, load_experiment, response_table
from svclab_analysis.stats import mann_whitney, median_ci

BOUND = 1.05
TRACING = "deploy.tracing"
PLACE = "deploy.telemetry_cpus"


def host_cpu_ms_per_request(run_dir: str, requests: float) -> float:
    """The hosts' CPU (role host, the measurement window) per request, in ms."""
    rs = pd.read_parquet(Path(run_dir) / "resources.parquet")
    rs = rs[(rs["t_s"] >= 0) & (rs["role"] == "host")]
    used = rs.groupby("process")["cpu_s"].agg(lambda x: x.max() - x.min()).sum()
    return 1000.0 * float(used) / requests if requests > 0 else math.nan


def block_ratios(df: pd.DataFrame, place: str) -> np.ndarray:
    """Per repetition, the traced run's p50 over the mean of its untraced runs."""
    out = []
    for _, b in df.groupby("repetition"):
        on = b[(b[TRACING] == "1") & (b[PLACE] == place)]["p50_ms"]
        off = b[b[TRACING] == "0"]["p50_ms"]
        if len(on) == 1 and len(off) > 0:
            out.append(float(on.iloc[0]) / float(off.mean()))
    return np.asarray(out)


def results_dir(arg: Path) -> Path:
    """PATH itself when it holds an experiment, else its newest tracing-overhead set."""
    if (arg / "experiment.json").exists():
        return arg
    found = latest_results(arg, "tracing-overhead")
    if found is None:
        sys.exit(f"{arg}: neither a results directory nor one holding tracing-overhead results")
    return found


def warning_kinds(warnings: list[RunWarning]) -> set[str]:
    """The kinds of a run's warnings."""
    return {w.kind or "other" for w in warnings}


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    path = results_dir(Path(sys.argv[1]))
    exp = load_experiment(path)
    df = response_table(exp)
    runs = exp.runs.set_index("run_id")
    df[TRACING] = df[TRACING].astype(str)
    df[PLACE] = df[PLACE].astype(str)
    df["dir"] = [runs.loc[r, "dir"] for r in df["run_id"]]
    df["kinds"] = [warning_kinds(runs.loc[r, "warnings"]) for r in df["run_id"]]
    df["cpu_ms"] = [host_cpu_ms_per_request(d, c) for d, c in zip(df["dir"], df["count"])]
    print(f"{path}: {len(df)} ok runs of {len(exp.runs)}")

    print(f"\n{'tracing':<8} {'telemetry_cpus':<15} {'n':>3} {'median p50 ms':>14} {'hosts cpu ms/req':>17}  warnings (runs)")
    for (tr, pl), g in df.groupby([TRACING, PLACE]):
        kinds = sorted(set().union(*g["kinds"]))
        counts = ", ".join(f"{k} {sum(k in ks for ks in g['kinds'])}" for k in kinds) or "none"
        print(f"{tr:<8} {pl:<15} {len(g):>3} {num(g['p50_ms'].median()):>14} {num(g['cpu_ms'].median()):>17}  {counts}")

    off = df[df[TRACING] == "0"]
    same = mann_whitney(off[off[PLACE] == "generator"]["p50_ms"].to_numpy(), off[off[PLACE] == "system"]["p50_ms"].to_numpy())
    print(f"\nuntraced, generator ÷ system placement (should be 1): {est(same['ratio'], same['ratio_ci_low'], same['ratio_ci_high'], '×')} "
          f"p={same['p']:.2g} (n={same['n_a']}, {same['n_b']})")

    base = off["p50_ms"].to_numpy()
    for place in sorted(set(df[PLACE])):
        on = df[(df[TRACING] == "1") & (df[PLACE] == place)]["p50_ms"].to_numpy()
        if len(on) == 0:
            continue
        r = mann_whitney(on, base)
        print(f"\ntraced ÷ untraced, backend on the {place}'s CPUs:")
        print(f"  unpaired: ratio of medians {est(r['ratio'], r['ratio_ci_low'], r['ratio_ci_high'], '×')}, Mann-Whitney p={r['p']:.2g} (n={r['n_a']}, {r['n_b']})")
        br = block_ratios(df, place)
        if len(br) < 6:
            print(f"  blocked:  {len(br)} repetition(s), too few for an interval (six at least)")
            continue
        lo, hi = median_ci(br)
        w = stats.wilcoxon(np.log(br) - math.log(BOUND), alternative="less")
        print(f"  blocked:  median of {len(br)} within-block ratios {est(float(np.median(br)), lo, hi, '×')}, "
              f"mean {num(float(np.mean(br)))}×; Wilcoxon signed-rank, ratios below {BOUND}: p={w.pvalue:.2g}")


if __name__ == "__main__":
    main()
