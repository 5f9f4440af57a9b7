"""Read an svclab result directory (docs/RESULTS.md) into run-level DataFrames.

The run is the unit of replication: every function here reduces a run to one
row of numbers. Per-request samples and HDR logs are read only to describe
distributions (CDFs), never to feed a test.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import AnalysisError
from .metrics import CORE_METRICS, canonical

RUN_COLUMNS = [
    "run_id",
    "index",
    "repetition",
    "status",
    "reason",
    "bottleneck",
    "warnings",
    "late_sends",
    "dropped",
    "duration_s",
    "dir",
]


@dataclass
class Factor:
    name: str
    letter: str
    levels: list[str]

    @property
    def short(self) -> str:
        """`deploy.transport` -> `transport`: column headers stay readable."""
        return self.name.rsplit(".", 1)[-1]


@dataclass
class Experiment:
    """Everything the report needs, as plain DataFrames plus the metadata."""

    path: Path
    meta: dict[str, Any]
    factors: list[Factor]
    runs: pd.DataFrame
    metrics: pd.DataFrame
    response_metric: str = "p99_ms"
    response_operation: str = "total"
    notes: list[str] = field(default_factory=list)

    @property
    def factor_names(self) -> list[str]:
        return [f.name for f in self.factors]

    def ok_runs(self) -> pd.DataFrame:
        return self.runs[self.runs["status"] == "ok"]


# Warning kinds the analysis matches; internal/warn names every kind.
BOTTLENECK = "generator_bottleneck"
RESOURCES = "resources"


@dataclass(frozen=True)
class RunWarning:
    """One line of run.json's "warnings": a kind to match, a text to show."""

    kind: str
    text: str


_OF_GENERATOR = re.compile(r"generator [0-9]+/[0-9]+: ")
_KIND_PREFIX = re.compile(r"([a-z][a-z0-9_]*): ")
_SPANS = re.compile(r"[0-9]+ (span|client or proxy span|trace|call)(\(s\)|s)? ")


def warning_kind(text: str) -> str:
    """The kind of a warning of a result written before warnings had kinds.

    Such a result holds plain strings: the kind is the word before the first
    ": " ("saturated: ..."), or `interrupted` and `spans_dropped` for those
    texts, which have none; "" when the text shows no kind. internal/warn's
    Parse derives it alike, and internal/warn/testdata/legacy.json holds both
    to the same cases.
    """
    m = _OF_GENERATOR.match(text)
    body = text[m.end():] if m else text
    if k := _KIND_PREFIX.match(body):
        return k.group(1)
    if body.startswith("interrupted after "):
        return "interrupted"
    if _SPANS.match(body):
        return "spans_dropped"
    return ""


def run_warning(raw: Any) -> RunWarning:
    """A warning as run.json holds it: {"kind", "text"}, or an older plain string."""
    if isinstance(raw, dict):
        return RunWarning(str(raw.get("kind") or ""), str(raw.get("text") or ""))
    text = str(raw)
    return RunWarning(warning_kind(text), text)


def level_str(value: Any) -> str:
    """One spelling for a level, whether it came from TOML, JSON or a CSV, and
    the one every table, figure and answer shows. A linked factor's level (a
    table of keys) reads "mtls=true, tracing=1": each key by its last part
    (whole when two share it), in key order, each value spelt as a level."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, dict) and value:
        keys = sorted(value, key=str)
        shorts = [str(k).rsplit(".", 1)[-1] for k in keys]
        if len(set(shorts)) < len(shorts):
            shorts = [str(k) for k in keys]
        return ", ".join(f"{s}={level_str(value[k])}" for s, k in zip(shorts, keys, strict=True))
    return json.dumps(value, sort_keys=True)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise AnalysisError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except OSError as exc:
        raise AnalysisError(f"{path}: cannot read ({exc.strerror})") from None
    if not isinstance(data, dict):
        raise AnalysisError(f"{path}: expected a JSON object")
    return data


def _num(value: Any) -> float:
    """JSON null (Go cannot write NaN) and missing keys become NaN."""
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def operation_metrics(op: dict[str, Any]) -> dict[str, float]:
    """Run-level numbers for one operation of summary.json."""
    lat = op.get("latency") or {}
    count = _num(op.get("count"))
    if count == 0:
        # The store writes every statistic of an empty operation as 0; a
        # latency of 0 ms would be a lie, so it is missing instead.
        lat = {}
    errors = _num(op.get("errors"))
    rps = _num(op.get("rps"))
    err_frac = errors / count if count and count > 0 else math.nan
    out = {
        "count": count,
        "errors": errors,
        "completed_rps": rps,
        # Throughput counts only served requests: errors that return fast must
        # not look like capacity (the S1 lesson).
        "throughput_rps": rps * (1.0 - err_frac) if not math.isnan(err_frac) else rps,
        "error_rate_pct": 100.0 * err_frac,
    }
    for key in ("mean_ms", "stdev_ms", "min_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms",
                "p999_ms", "max_ms"):
        out[key] = _num(lat.get(key))
    st = op.get("service_time") or {}
    for key in ("mean_ms", "p50_ms", "p99_ms"):
        out["service_" + key] = _num(st.get(key))
    return out


# Roles in resources.parquet that are not the system under test: the load
# generators, and the telemetry backends a deployment runs beside its
# hosts (a mesh's collector, whose cost is reported apart).
NOT_SUT_ROLES = ("loadgen", "telemetry")


def cpu_seconds(resources: pd.DataFrame, duration_s: float) -> float:
    """CPU seconds the system under test used in the measurement window.

    The load generators are excluded because they are not the system under
    test: every row of role `loadgen` (svclab's own process, `loadgen#I` of
    load.generators, a kube load pod), and by name in stores written before
    the role column; so are the telemetry backends (role `telemetry`).
    """
    if resources.empty or "process" not in resources.columns:
        return math.nan
    name = resources["process"].astype(str)
    out = (name == "loadgen") | name.str.startswith("loadgen#")
    if "role" in resources.columns:
        out |= resources["role"].astype(str).isin(NOT_SUT_ROLES)
    return window_cpu_seconds(resources[~out], duration_s)


def window_cpu_seconds(resources: pd.DataFrame, duration_s: float) -> float:
    """CPU seconds the processes of `resources` used in the measurement window.

    `cpu_s` is cumulative per process and sampled about once a second, so
    each process's counter is read at the window's edges, 0 and duration, by
    linear interpolation between the samples around each edge: not from the
    last sample before 0 to the last one after the end, which could make the
    window up to two sampling intervals longer than the one whose requests it
    is divided by. A process sampled only after 0 (started in the window)
    counts from its first sample, and one sampled last before the end (it
    exited, or an older store without a sample at the end) up to its last.
    Keyed by pid too: a restarted or replicated process is a separate counter.
    """
    need = {"t_s", "process", "cpu_s"}
    if resources.empty or not need <= set(resources.columns):
        return math.nan
    df = resources
    keys = ["process", "pid"] if "pid" in df.columns else ["process"]
    end = duration_s if duration_s and not math.isnan(duration_s) else math.inf
    total = 0.0
    for _, g in df.groupby(keys, sort=False):
        g = g.sort_values("t_s")
        t, cpu = g["t_s"].to_numpy(dtype=float), g["cpu_s"].to_numpy(dtype=float)
        if not ((t >= 0) & (t <= end + 0.5)).any():
            continue
        # np.interp holds the edge values beyond the samples.
        hi = float(np.interp(end, t, cpu)) if math.isfinite(end) else float(cpu[-1])
        total += hi - float(np.interp(0.0, t, cpu))
    return total


ROLE_USAGE = ["role", "cpu_s", "rss_mb", "pss_mb", "processes"]


def role_usage(resources: pd.DataFrame, duration_s: float) -> pd.DataFrame:
    """CPU seconds in the measurement window, mean memory (MiB) and process
    count per role of resources.parquet (host, sidecar, node-proxy,
    telemetry); the load generators are left out. rss_mb sums the processes'
    RSS, which counts pages they share (the binary every host maps) once in
    each; pss_mb sums their proportional set sizes, which count each shared
    page once in all, and is NaN where the run did not record it. Empty for
    stores without the role column."""
    rows = []
    if resources.empty or "role" not in resources.columns:
        return pd.DataFrame(columns=ROLE_USAGE)
    inside = resources[(resources["t_s"] >= 0) & (resources["t_s"] <= duration_s + 0.5)]
    for role, g in resources.groupby("role", sort=True):
        if role in ("", "loadgen"):
            continue
        win = inside[inside["role"] == role]
        rows.append({"role": str(role), "cpu_s": window_cpu_seconds(g, duration_s),
                     "rss_mb": _mean_sum_mib(win, "rss_bytes"),
                     "pss_mb": _mean_sum_mib(win, "pss_bytes"),
                     "processes": int(g["process"].nunique())})
    return pd.DataFrame(rows, columns=ROLE_USAGE)


def _mean_sum_mib(win: pd.DataFrame, column: str) -> float:
    """The mean over sample times of column summed over the processes, in
    MiB; NaN when no sample has it."""
    if column not in win.columns:
        return math.nan
    per_sample = win.dropna(subset=[column]).groupby("t_s")[column].sum()
    return float(per_sample.mean()) / 2**20 if len(per_sample) else math.nan


def load_role_cpu(exp: Experiment) -> pd.DataFrame:
    """CPU ms per request of each role of each ok run (role_usage over the
    requests the run completed), with run_id and factor columns; empty when
    no run recorded roles."""
    ok = exp.ok_runs()
    m = exp.metrics
    counts = m[m["operation"] == "total"].set_index("run_id")["count"] if not m.empty else {}
    frames = []
    for _, r in ok.iterrows():
        p = Path(r["dir"]) / "resources.parquet"
        n = counts.get(r["run_id"], math.nan) if len(counts) else math.nan
        if not p.exists() or not n or n != n:
            continue
        u = role_usage(_read_parquet(p), float(r["duration_s"]))
        if u.empty:
            continue
        u["cpu_ms_per_request"] = 1000.0 * u["cpu_s"] / float(n)
        u["run_id"] = r["run_id"]
        frames.append(u)
    return _with_factors(frames, ok, exp)


def _with_factors(frames: list[pd.DataFrame], ok: pd.DataFrame, exp: Experiment) -> pd.DataFrame:
    """The runs' frames as one, each row with its run's factor levels;
    empty when no run had one."""
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True).merge(
        ok[["run_id", *exp.factor_names]], on="run_id")


def _read_parquet(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for a torn file
        raise AnalysisError(f"{path}: cannot read Parquet ({exc})") from None


def _factors_from_meta(meta: dict[str, Any], run_levels: list[dict[str, str]]) -> list[Factor]:
    factors: list[Factor] = []
    raw = meta.get("factors")
    if isinstance(raw, list) and raw:
        for i, f in enumerate(raw):
            if not isinstance(f, dict) or "name" not in f:
                raise AnalysisError("experiment.json: each factor needs a \"name\"")
            levels = [level_str(v) for v in f.get("levels") or []]
            letter = str(f.get("letter") or chr(ord("A") + i))
            factors.append(Factor(str(f["name"]), letter, levels))
    else:
        # Hand-written stores may lack experiment.json's factors: take them
        # from the runs, in first-seen order.
        names: list[str] = []
        for lv in run_levels:
            names += [n for n in lv if n not in names]
        for i, n in enumerate(names):
            seen: list[str] = []
            for lv in run_levels:
                if n in lv and lv[n] not in seen:
                    seen.append(lv[n])
            factors.append(Factor(n, chr(ord("A") + i), seen))
    # Levels that occur in runs but not in the plan still count.
    for f in factors:
        for lv in run_levels:
            v = lv.get(f.name)
            if v is not None and v not in f.levels:
                f.levels.append(v)
    return factors


def load_experiment(
    path: str | Path,
    metric: str | None = None,
    operation: str | None = None,
) -> Experiment:
    """Load a result directory. Raises AnalysisError for anything a user can fix."""
    root = Path(path)
    if not root.exists():
        raise AnalysisError(f"{root}: no such results directory")
    if not root.is_dir():
        raise AnalysisError(f"{root}: not a directory")
    notes: list[str] = []
    meta_path = root / "experiment.json"
    if meta_path.exists():
        meta = _read_json(meta_path)
    else:
        meta = {}
        notes.append("experiment.json is missing: factors are taken from the runs' run.json")
    runs_dir = root / "runs"
    run_dirs = (
        sorted(d for d in runs_dir.iterdir() if d.is_dir() and not d.name.startswith("."))
        if runs_dir.is_dir()
        else []
    )
    if not run_dirs:
        raise AnalysisError(f"{root}: no runs (expected committed run directories under runs/)")

    run_rows: list[dict[str, Any]] = []
    metric_rows: list[dict[str, Any]] = []
    run_levels: list[dict[str, str]] = []
    for d in run_dirs:
        rj = d / "run.json"
        if not rj.exists():
            notes.append(f"{d.name}: no run.json, skipped")
            continue
        run = _read_json(rj)
        levels = {str(k): level_str(v) for k, v in (run.get("levels") or {}).items()}
        run_levels.append(levels)
        gen = run.get("generator") or {}
        warnings = [run_warning(w) for w in run.get("warnings") or []]
        bottleneck = bool(gen.get("bottleneck")) or any(w.kind == BOTTLENECK for w in warnings)
        if bottleneck and gen.get("reason") and not any(w.kind == BOTTLENECK for w in warnings):
            warnings.insert(0, RunWarning(BOTTLENECK, f"{BOTTLENECK}: {gen['reason']}"))
        row: dict[str, Any] = {
            "run_id": str(run.get("id") or d.name),
            "index": int(run.get("index") or 0),
            "repetition": int(run.get("repetition") or 0),
            "status": str(run.get("status") or "failed"),
            "reason": str(run.get("reason") or ""),
            "bottleneck": bottleneck,
            "warnings": warnings,
            "late_sends": _num(gen.get("late_sends")),
            "dropped": _num(gen.get("dropped")),
            "duration_s": _num(run.get("duration_s")),
            "dir": str(d),
            "levels": levels,
        }
        summary_path = d / "summary.json"
        if row["status"] == "ok" and not summary_path.exists():
            row["status"] = "failed"
            row["reason"] = "summary.json missing"
        if row["status"] == "ok":
            summary = _read_json(summary_path)
            ops = summary.get("operations")
            if not isinstance(ops, list) or not ops:
                raise AnalysisError(f"{summary_path}: no \"operations\" array")
            duration = _num(summary.get("duration_s"))
            if math.isnan(duration):
                duration = row["duration_s"]
            row["duration_s"] = duration
            res_path = d / "resources.parquet"
            cpu = (
                cpu_seconds(_read_parquet(res_path), duration) if res_path.exists() else math.nan
            )
            total_count = math.nan
            for op in ops:
                if isinstance(op, dict) and op.get("kind") == "total":
                    total_count = _num(op.get("count"))
            for op in ops:
                if not isinstance(op, dict) or "name" not in op:
                    raise AnalysisError(f"{summary_path}: an operation has no \"name\"")
                om = operation_metrics(op)
                om["cpu_s"] = cpu
                om["cpu_s_per_1k"] = (
                    1000.0 * cpu / total_count if total_count and total_count > 0 else math.nan
                )
                metric_rows.append(
                    {"run_id": row["run_id"], "operation": str(op["name"]),
                     "kind": str(op.get("kind") or "request"), **om}
                )
        run_rows.append(row)

    if not run_rows:
        raise AnalysisError(f"{root}: no run has a run.json")
    factors = _factors_from_meta(meta, run_levels)
    runs = pd.DataFrame(run_rows)
    for f in factors:
        runs[f.name] = pd.Categorical(
            [lv.get(f.name) for lv in runs["levels"]], categories=f.levels, ordered=True
        )
    runs = runs.drop(columns=["levels"]).sort_values(["index", "run_id"]).reset_index(drop=True)

    planned = meta.get("runs")
    if isinstance(planned, list) and len(planned) > len(runs):
        notes.append(
            f"{len(planned) - len(runs)} of {len(planned)} planned runs have no results "
            "(interrupted? `svclab run --resume` continues the plan)"
        )

    metrics = pd.DataFrame(metric_rows)
    if metrics.empty:
        reasons = sorted({r for r in runs["reason"] if r})
        why = f" ({'; '.join(reasons[:3])})" if reasons else ""
        raise AnalysisError(f"{root}: no run finished ok, nothing to analyse{why}")
    metrics = metrics.merge(
        runs[["run_id", "index", "repetition", *[f.name for f in factors]]], on="run_id"
    )

    response = meta.get("response") or {}
    m = canonical(metric or str(response.get("metric") or "p99_ms"))
    op_name = operation or str(response.get("operation") or "total")
    if m not in metrics.columns:
        known = ", ".join(c for c in CORE_METRICS)
        raise AnalysisError(f"unknown metric {m!r}; known metrics: {known}")
    if op_name not in set(metrics["operation"]):
        ops = ", ".join(sorted(set(metrics["operation"])))
        raise AnalysisError(f"no operation {op_name!r} in the runs; operations: {ops}")
    return Experiment(root, meta, factors, runs, metrics, m, op_name, notes)


def response_table(exp: Experiment, operation: str | None = None) -> pd.DataFrame:
    """One row per ok run for one operation: factor columns plus every metric."""
    op = operation or exp.response_operation
    df = exp.metrics[exp.metrics["operation"] == op].copy()
    return df.sort_values("index").reset_index(drop=True)


def load_timeseries(exp: Experiment, run_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """timeseries.parquet of the ok runs, with run_id and factor columns added."""
    ok = exp.ok_runs()
    if run_ids is not None:
        ok = ok[ok["run_id"].isin(list(run_ids))]
    frames = []
    for _, r in ok.iterrows():
        p = Path(r["dir"]) / "timeseries.parquet"
        if p.exists():
            ts = _read_parquet(p)
            ts["run_id"] = r["run_id"]
            frames.append(ts)
    return _with_factors(frames, ok, exp)


def load_scaling(exp: Experiment, run_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """scaling.parquet (the autoscalers' decisions) of the ok runs that have
    one, with run_id and factor columns added; empty when no run was
    autoscaled."""
    ok = exp.ok_runs()
    if run_ids is not None:
        ok = ok[ok["run_id"].isin(list(run_ids))]
    frames = []
    for _, r in ok.iterrows():
        p = Path(r["dir"]) / "scaling.parquet"
        if p.exists():
            df = _read_parquet(p)
            df["run_id"] = r["run_id"]
            frames.append(df)
    frames = [f for f in frames if not f.empty]
    return _with_factors(frames, ok, exp)


def replicas_over_time(scaling: pd.DataFrame) -> pd.DataFrame:
    """One row per decision (the metrics of one decision share it): run_id,
    group, t_s, and the replicas the group had before (current) and after
    (desired)."""
    if scaling.empty:
        return pd.DataFrame(columns=["run_id", "group", "t_s", "current", "desired"])
    per_metric = ["metric", "utilization_pct", "target_pct", "proposed", "reason", "error"]
    d = scaling.drop_duplicates(subset=["run_id", "group", "t_s"])
    d = d.drop(columns=[c for c in per_metric if c in d.columns])
    return d.sort_values(["run_id", "group", "t_s"]).reset_index(drop=True)


def load_hops(exp: Experiment) -> pd.DataFrame:
    """hops.parquet of the ok runs (runs with deploy.tracing), with run_id and
    factor columns added; empty when no run has one."""
    ok = exp.ok_runs()
    frames = []
    for _, r in ok.iterrows():
        p = Path(r["dir"]) / "hops.parquet"
        if p.exists():
            h = _read_parquet(p)
            h["run_id"] = r["run_id"]
            frames.append(h)
    return _with_factors(frames, ok, exp)


def load_samples(
    exp: Experiment, operation: str, max_per_run: int = 20000, seed: int = 1
) -> pd.DataFrame:
    """Per-request latencies (ms) of the ok runs, thinned per run for plotting."""
    ok = exp.ok_runs()
    rng = np.random.default_rng(seed)
    frames = []
    for _, r in ok.iterrows():
        p = Path(r["dir"]) / "samples.parquet"
        if not p.exists():
            continue
        s = _read_parquet(p)
        if "latency_us" not in s.columns:
            continue
        if "operation" in s.columns and operation != "total":
            s = s[s["operation"] == operation]
        if len(s) > max_per_run:
            s = s.iloc[np.sort(rng.choice(len(s), max_per_run, replace=False))]
        frames.append(
            pd.DataFrame({"run_id": r["run_id"], "latency_ms": s["latency_us"].to_numpy() / 1e3})
        )
    if not frames:
        return pd.DataFrame(columns=["run_id", "latency_ms"])
    out = pd.concat(frames, ignore_index=True)
    return out.merge(ok[["run_id", *exp.factor_names]], on="run_id")


def hdr_quantiles(paths: Iterable[Path], tag: str, quantiles: np.ndarray) -> np.ndarray | None:
    """Latency quantiles (ms) over whole HdrHistogram interval logs for one tag.

    Returns None when no log is there or one is unreadable: HDR logs only
    feed the CDF plot, so a missing one must not stop a report.
    """
    paths = [p for p in paths if p.exists()]
    # The log format forbids spaces and commas in tags; the store writes "_".
    tag = tag.replace(" ", "_").replace(",", "_")
    if not paths:
        return None
    try:
        from hdrh.histogram import HdrHistogram
    except ImportError:
        return None
    total: HdrHistogram | None = None
    try:
        lines = [ln.strip() for p in paths for ln in p.read_text(encoding="utf-8").splitlines()]
        for line in lines:
            if not line or line.startswith(("#", '"', "StartTimestamp")):
                continue
            line_tag = None
            if line.startswith("Tag="):
                line_tag, line = line[4:].split(",", 1)
            if (line_tag or "total") != tag:
                continue
            h = HdrHistogram.decode(line.rsplit(",", 1)[-1])
            if total is None:
                total = h
            else:
                total.add(h)
    except Exception:
        return None
    if total is None or total.get_total_count() == 0:
        return None
    return np.array([total.get_value_at_percentile(100.0 * q) for q in quantiles]) / 1e3
