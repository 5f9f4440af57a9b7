"""The `svclab-analysis` command line.

Bad input ends in one line naming the problem and exit code 2; an
unexpected failure in one line and exit code 1 (SVCLAB_DEBUG=1 shows the
traceback).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd

from . import __version__
from .english import count
from .errors import AnalysisError
from .formatting import num, percent

PROG = "svclab-analysis"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse's default prints the whole usage; one line is easier to act on.
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def read_table(path: str) -> pd.DataFrame:
    """A CSV (or Parquet) of run-level rows, from a file or `-` for stdin."""
    if path != "-":
        p = Path(path)
        if not p.exists():
            raise AnalysisError(f"{path}: no such file")
        if p.is_dir():
            raise AnalysisError(f"{path}: is a directory, expected a CSV file")
    try:
        if path.endswith(".parquet"):
            df = pd.read_parquet(path)
        else:
            df = pd.read_csv(sys.stdin if path == "-" else path, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise AnalysisError(f"{path}: empty file") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise AnalysisError(f"{path}: cannot read ({first})") from None
    if df.empty:
        raise AnalysisError(f"{path}: no data rows")
    df.columns = [str(c).strip() for c in df.columns]
    return df


def _split(s: str) -> list[str]:
    return [p.strip() for p in s.split(",") if p.strip()]


def _pairs(items: Sequence[str] | None, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for it in items or []:
        if "=" not in it:
            raise AnalysisError(f"{flag} {it!r}: expected NAME=VALUE")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _where(df: pd.DataFrame, items: Sequence[str] | None) -> pd.DataFrame:
    for col, val in _pairs(items, "--where").items():
        if col not in df.columns:
            raise AnalysisError(f"--where: no column {col!r}")
        df = df[df[col].astype(str) == val]
        if df.empty:
            raise AnalysisError(f"--where {col}={val}: no rows match")
    return df


def _clean(v: Any) -> Any:
    """JSON has no NaN: missing numbers become null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):
        return _clean(v.item())
    return v


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): _clean(v) for k, v in row.items()} for row in df.to_dict("records")]


def _fmt(v: Any) -> str:
    # Counts and labels stay as they are; only measured values are rounded.
    return num(v, significant=4) if isinstance(v, float) else str(v)


def table(df: pd.DataFrame) -> str:
    cells = [[str(c) for c in df.columns]] + [[_fmt(v) for v in row] for row in df.itertuples(
        index=False)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in enumerate(
        zip(r, widths, strict=True))) for r in cells]
    return "\n".join(lines)


def cmd_allocate(args: argparse.Namespace) -> int:
    from .design import factorial
    from .stats import shapiro

    df = _where(read_table(args.data), args.where)
    factors = _split(args.factors)
    levels = {k: _split(v) for k, v in _pairs(args.levels, "--levels").items()}
    res = factorial(df, args.response, factors, levels=levels, log=args.log,
                    confidence=args.confidence)
    sw = shapiro(res.residuals["residual"].to_numpy()) if res.dof_error > 0 else None
    terms = res.terms
    if args.format == "json":
        out = {
            "response": args.response,
            "log": res.log,
            "confidence": res.confidence,
            "replications": res.replications,
            "balanced": res.balanced,
            "dof_error": res.dof_error,
            "factors": [{"name": c.name, "low": c.low, "high": c.high} for c in res.factors],
            "terms": records(terms),
            "shapiro": {k: _clean(v) for k, v in sw.items()} if sw else None,
            "notes": res.notes,
        }
        print(json.dumps(out, indent=2, allow_nan=False))
        return 0
    k = len(res.factors)
    y = f"log({args.response})" if res.log else args.response
    print(f"2^{k} r factorial design, r = {res.replications}, response {y}, "
          f"{round(100 * res.confidence)}% confidence intervals "
          f"(t with {res.dof_error} degrees of freedom)")
    for c in res.factors:
        print(f"  {c.name}: -1 = {c.low}, +1 = {c.high}")
    print()
    print(table(terms))
    if sw is not None and math.isfinite(sw["p"]):
        print(f"\nresiduals: Shapiro-Wilk W = {sw['W']:.3f}, p = {sw['p']:.3g} (n = {sw['n']})")
    for n in res.notes:
        print(f"note: {n}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from .stats import compare

    df = _where(read_table(args.data), args.where)
    res = compare(df, args.response, args.group, confidence=args.confidence, seed=args.seed)
    if args.format == "json":
        out: dict[str, Any] = {
            "response": args.response,
            "group": args.group,
            "confidence": args.confidence,
            "groups": records(res["groups"]),
            "pairs": records(res["pairs"]),
            "kruskal": records(res["kruskal"])[0] if "kruskal" in res else None,
            "dunn": records(res["dunn"]) if "dunn" in res else None,
        }
        print(json.dumps(out, indent=2, allow_nan=False))
        return 0
    print(f"{args.response} by {args.group}\n")
    print(table(res["groups"]))
    print("\nMann-Whitney U, pairwise (p_holm: Holm-adjusted); ratio = median(a)/median(b) "
          f"with {round(100 * args.confidence)}% bootstrap CI\n")
    cols = ["a", "b", "n_a", "n_b", "U", "p", "p_holm", "rank_biserial", "ratio",
            "ratio_ci_low", "ratio_ci_high"]
    print(table(res["pairs"][cols]))
    if "kruskal" in res:
        kw = res["kruskal"].iloc[0]
        print(f"\nKruskal-Wallis H = {kw['H']:.4g}, df = {int(kw['df'])}, p = {kw['p']:.4g}")
        print("Dunn's test, Holm-adjusted:\n")
        print(table(res["dunn"]))
    return 0


def cmd_samplesize(args: argparse.Namespace) -> int:
    from .stats import sample_size

    df = _where(read_table(args.data), args.where)
    by = _split(args.by) if args.by else []
    for b in by:
        if b not in df.columns:
            raise AnalysisError(f"no column {b!r}; columns are: {', '.join(map(str, df.columns))}")
    res = sample_size(df, args.response, by=by, error_pct=args.error, confidence=args.confidence)
    req = res["required"].max()
    if args.format == "json":
        out = {
            "response": args.response,
            "error_pct": args.error,
            "confidence": args.confidence,
            "required": _clean(float(req)) if req == req else None,
            "groups": records(res),
        }
        print(json.dumps(out, indent=2, allow_nan=False))
        return 0
    print(table(res))
    if req == req:
        print(f"\n{int(req)} values per group give a ±{args.error:g}% interval on the mean at "
              f"{round(100 * args.confidence)}% confidence")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .report import build_report

    path = build_report(args.results, out=args.out, metric=args.metric,
                        operation=args.operation, log=args.log, confidence=args.confidence)
    print(path)
    return 0


def cmd_decide(args: argparse.Namespace) -> int:
    from .questions import answer_record, experiment_answers, is_sequential
    from .results import load_experiment
    from .sequential import METHOD

    exp = load_experiment(args.results)
    answers = experiment_answers(exp, confidence=args.confidence)
    if not answers:
        raise AnalysisError(f"{args.results}: the spec declares no [[experiment.questions]]")
    decided = all(a.decided for a in answers)
    if args.format == "json":
        print(json.dumps({"decided": decided, "sequential": is_sequential(exp.meta),
                          "method": METHOD if is_sequential(exp.meta) else
                          "Student's t on the log scale, cell-means model",
                          "questions": [answer_record(a) for a in answers]}, indent=1))
        return 0
    for a in answers:
        blocks = f", {count(a.blocks, 'block')}" if a.method == "sequential" else ""
        state = "decided" if a.decided else "undecided"
        flagged = f", {a.flagged} flagged left out" if a.flagged else ""
        print(f"{a.question.name}: {state} ({count(a.runs, 'run')}{blocks}{flagged})")
        for r in a.ratios:
            where = " ".join(f"{f}={v}" for f, v in r.by)
            # The level is each interval's own (the question's, shared
            # among its ratios), as the report writes it.
            print(f"  {where or 'all'}: {_fmt(r.ratio)}x ({percent(r.confidence)}% CI "
                  f"{_fmt(r.low)} to {_fmt(r.high)}) {r.verdict}")
    print("decided" if decided else "undecided")
    return 0


def _confidence(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
    if v >= 1 and v < 100:
        v /= 100.0  # accept 95 as well as 0.95
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"confidence must be in (0, 1), got {s}")
    return v


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Statistics and reports for svclab experiments.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    def data_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("data", help="CSV (or .parquet) with one row per run; - for stdin")
        sp.add_argument("--response", "-y", required=True, help="numeric response column")
        sp.add_argument("--where", action="append", metavar="COL=VALUE",
                        help="keep only rows where COL equals VALUE (repeatable)")
        sp.add_argument("--confidence", type=_confidence, default=0.95,
                        help="confidence level, default 0.95")
        sp.add_argument("--format", choices=["table", "json"], default="table")

    a = sub.add_parser("allocate", help="2^k r factorial: effects, CIs, allocation of variation")
    data_args(a)
    a.add_argument("--factors", required=True, help="comma-separated factor columns")
    a.add_argument("--levels", action="append", metavar="FACTOR=LOW,HIGH",
                   help="two levels of a factor that has more (repeatable)")
    a.add_argument("--log", action="store_true", help="analyse log(y): effects become ratios")
    a.set_defaults(func=cmd_allocate)

    c = sub.add_parser("compare", help="Mann-Whitney U, Kruskal-Wallis and Dunn between groups")
    data_args(c)
    c.add_argument("--group", required=True, help="the column whose levels are compared")
    c.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    c.set_defaults(func=cmd_compare)

    s = sub.add_parser("samplesize", help="Jain's estimate of the repetitions needed")
    data_args(s)
    s.add_argument("--error", type=float, default=5.0, help="target half-width in %% of the mean")
    s.add_argument("--by", help="comma-separated columns: estimate per group")
    s.set_defaults(func=cmd_samplesize)

    r = sub.add_parser("report", help="write report.html and report.md for a results directory")
    r.add_argument("results", help="an svclab results directory")
    r.add_argument("--metric", help="headline metric (default: experiment.json's response)")
    r.add_argument("--operation", help="operation (default: experiment.json's, else total)")
    r.add_argument("--out", help="output directory (default: the results directory)")
    r.add_argument("--log", action="store_true", help="analyse log(metric): effects as ratios")
    r.add_argument("--confidence", type=_confidence, default=0.95,
                   help="confidence level, default 0.95")
    r.set_defaults(func=cmd_report)

    d = sub.add_parser("decide", help="answer the spec's questions: decided or not, so far")
    d.add_argument("results", help="an svclab results directory")
    d.add_argument("--confidence", type=_confidence, default=0.95,
                   help="confidence level, default 0.95")
    d.add_argument("--format", choices=["table", "json"], default="table")
    d.set_defaults(func=cmd_decide)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            if not os.environ.get("SVCLAB_DEBUG"):
                warnings.simplefilter("ignore")
            return int(args.func(args))
    except AnalysisError as exc:
        print(f"{PROG} {args.cmd}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if os.environ.get("SVCLAB_DEBUG"):
            raise
        print(f"{PROG} {args.cmd}: internal error: {type(exc).__name__}: {exc} "
              "(SVCLAB_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
