"""Reading results directories: the newest of a spec, its provenance and the generator's audit."""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..formatting import duration, num
from ..results import Experiment, response_table
from .common import StudyData


def parse_time(s: Any) -> datetime | None:
    if not isinstance(s, str) or not s:
        return None
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass
class RunAudit:
    """What the load generator said about itself in one run."""

    bottleneck: bool
    cpu_percent: float
    lag_p99_ms: float
    reason: str


def run_audits(exp: Experiment) -> dict[str, RunAudit]:
    out: dict[str, RunAudit] = {}
    for _, r in exp.runs.iterrows():
        try:
            with open(Path(str(r["dir"])) / "run.json", encoding="utf-8") as fh:
                g = json.load(fh).get("generator") or {}
        except (OSError, json.JSONDecodeError):
            g = {}
        out[str(r["run_id"])] = RunAudit(
            bottleneck=bool(r["bottleneck"]),
            cpu_percent=float(g.get("cpu_percent") or math.nan),
            lag_p99_ms=float(g.get("lag_p99_ms") or math.nan),
            reason=str(g.get("reason") or ""),
        )
    return out


def study_data(exp: Experiment) -> StudyData:
    """What a study computes from: the run tables, and the generator's audit from run.json."""
    audits = run_audits(exp)
    runs = exp.runs.copy()
    runs["gen_cpu_percent"] = [audits[str(r)].cpu_percent for r in runs["run_id"]]
    runs["gen_lag_p99_ms"] = [audits[str(r)].lag_p99_ms for r in runs["run_id"]]
    cores = (exp.meta.get("host") or {}).get("cores") or 2
    tables, notes = {}, list(exp.notes)
    for op in dict.fromkeys(exp.metrics["operation"]):
        t = response_table(exp, op)
        # No answer in the window: the run has no latency for this operation
        # to compare, which is not a zero; its other operations still count.
        none = t["count"] == 0
        if none.any():
            ids = ", ".join(f"`{r}`" for r in t.loc[none, "run_id"])
            notes.append(f"{exp.path.name}: {op!r} got no answer in the measured window of "
                         f"run(s) {ids}, left out of that operation's figures")
            t = t[~none].reset_index(drop=True)
        tables[op] = t
    return StudyData(
        tables=tables,
        runs=runs,
        factors={f.name: list(f.levels) for f in exp.factors},
        closed_loop=closed_loop(exp),
        cores=int(cores),
        notes=tuple(notes),
    )


def replicate_info(exp: Experiment) -> dict[str, Any]:
    """replicate.json of a results directory (scripts/replicate.sh writes it), or {}."""
    path = exp.path / "replicate.json"
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def wall_time(exp: Experiment, rep: dict[str, Any]) -> str:
    """The spec's wall time: replicate.sh's measurement, else the runs' span."""
    if "wall_s" in rep:
        return f"{duration(float(rep['wall_s']))} (measured by scripts/replicate.sh, " \
               "analysis included)"
    start = parse_time(exp.meta.get("created"))
    ends: list[datetime] = []
    for d in exp.runs["dir"]:
        try:
            with open(Path(str(d)) / "run.json", encoding="utf-8") as fh:
                t = parse_time(json.load(fh).get("ended"))
        except (OSError, json.JSONDecodeError):
            t = None
        if t is not None:
            ends.append(t)
    if start is None or not ends:
        return "—"
    return f"{duration((max(ends) - start).total_seconds())} " \
           "(first run's start to last run's end; analysis not included)"


def provenance(exp: Experiment, default_command: str) -> str:
    """Where the numbers come from: directory, command, wall time, load, binary."""
    meta = exp.meta
    runs = exp.runs
    n_ok = int((runs["status"] == "ok").sum())
    n_flag = int(runs["bottleneck"].sum())
    planned = meta.get("runs")
    n_planned = len(planned) if isinstance(planned, list) else len(runs)
    rep = replicate_info(exp)
    command = str(rep.get("command") or "")
    if not command and meta.get("spec_path"):
        sets = [f"--set {shlex.quote(str(o))}" for o in meta.get("overrides") or []]
        command = " ".join(["bin/svclab run", *sets, shlex.quote(str(meta["spec_path"]))])
    command = command or default_command
    wall = wall_time(exp, rep)
    host = meta.get("host") or {}
    design = meta.get("design") or {}
    lines = [
        f"- Results: `{exp.path.name}`, {n_ok} of {n_planned} planned runs ok, "
        f"{n_flag} flagged by the generator's self-audit.",
        f"- Command: `{command}`",
        f"- Wall time: {wall}.",
    ]
    created = parse_time(meta.get("created"))
    when = created.strftime("%Y-%m-%d %H:%M UTC") if created else "—"
    lines.append(
        f"- Ran {when} on {host.get('cores', '?')} cores ({host.get('cpu_model', '?')}),"
        f" svclab {meta.get('svclab_version', '?')}; each run {design.get('warmup_s', '?')} s"
        f" warm-up + {design.get('duration_s', '?')} s measured, r = "
        f"{design.get('repetitions', '?')}, order {design.get('order', '?')} "
        f"(seed {meta.get('seed', '?')})."
    )
    load_bits = []
    if rep.get("loadavg_before") and rep.get("loadavg_after"):
        load_bits.append(f"{rep['loadavg_before']} before and {rep['loadavg_after']} after "
                         "(1, 5, 15 min)")
    during = rep.get("loadavg_during")
    if isinstance(during, dict) and during.get("samples"):
        load_bits.append(f"1-min average while it ran: mean {num(during.get('mean_1m'))}, "
                         f"max {num(during.get('max_1m'))} ({during['samples']} samples)")
    if load_bits:
        lines.append(f"- Load average: {'; '.join(load_bits)}. This experiment's own "
                     "processes account for up to about 2 of it; the rest is other work on "
                     "the machine.")
    return "\n".join(lines)


def closed_loop(exp: Experiment) -> bool:
    """Whether the runs used a closed loop (from the plan's effective specs)."""
    for r in exp.meta.get("runs") or []:
        load = ((r or {}).get("spec") or {}).get("load") or {}
        return str(load.get("mode") or "open") == "closed"
    return False


_STAMP = re.compile(r"-(\d{8}-\d{6})$")


def latest_results(root: Path, experiment: str) -> Path | None:
    """The newest `<experiment>-YYYYMMDD-HHMMSS` directory under root that has runs."""
    if not root.is_dir():
        return None
    best: tuple[str, Path] | None = None
    for d in root.iterdir():
        m = _STAMP.search(d.name)
        if not d.is_dir() or m is None or d.name[: m.start()] != experiment:
            continue
        if not (d / "experiment.json").exists() or not (d / "runs").is_dir():
            continue
        if best is None or m.group(1) > best[0]:
            best = (m.group(1), d)
    return best[1] if best else None
