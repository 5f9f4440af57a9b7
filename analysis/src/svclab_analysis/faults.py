"""Faults of [deploy.faults] in the results: each run's fault windows (run.json
"faults") and the success rate and latency around them (timeseries.parquet).

Computing only; plots.faults draws it. timeseries.parquet counts a request in
the second it ended, so a window [from_s, to_s) shows in the seconds from
floor(from_s) to floor(to_s) + 1 (a call that times out ends late)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from .results import Experiment

FAULT_COLUMNS = ["run_id", "kind", "target", "from_s", "to_s", "process", "error"]


def load_faults(exp: Experiment) -> pd.DataFrame:
    """One row per fault window of every ok run (FAULT_COLUMNS plus the factor
    columns); empty when no run had faults."""
    ok = exp.ok_runs()
    rows = []
    for _, r in ok.iterrows():
        p = Path(r["dir"]) / "run.json"
        if not p.exists():
            continue
        for f in json.loads(p.read_text()).get("faults") or []:
            rows.append({"run_id": r["run_id"], "kind": f.get("kind", ""),
                         "target": f.get("target", ""), "from_s": float(f.get("from_s", 0.0)),
                         "to_s": float(f.get("to_s", 0.0)), "process": f.get("process", ""),
                         "error": f.get("error", "")})
    if not rows:
        return pd.DataFrame(columns=[*FAULT_COLUMNS, *exp.factor_names])
    df = pd.DataFrame(rows)
    return df.merge(ok[["run_id", *exp.factor_names]], on="run_id")


def success_over_time(ts: pd.DataFrame) -> pd.DataFrame:
    """Per run and second: requests, errors and the success rate (NaN in a
    second with no request ended), from one operation's timeseries rows."""
    d = ts[["run_id", "second", "requests", "errors"]].copy()
    d = d.groupby(["run_id", "second"], as_index=False)[["requests", "errors"]].sum()
    d["success"] = (1.0 - d["errors"] / d["requests"]).where(d["requests"] > 0)
    return d.sort_values(["run_id", "second"]).reset_index(drop=True)


def around_faults(ts: pd.DataFrame, faults: pd.DataFrame, latency_col: str = "p99_ms",
                  settle_s: int = 1) -> pd.DataFrame:
    """For every fault window: the success rate (requests pooled) and the
    median of the per-second latency before it, during it, and after it once
    settle_s seconds have passed (the time a client takes to reconnect).

    "during" is the seconds floor(from_s) .. floor(to_s) (a kill: the second
    it happened in and the next); "before" is every second ended before
    floor(from_s); "after" from floor(to_s) + 1 + settle_s to the next window
    of the run or the run's end."""
    out = []
    for run_id, fr in faults.sort_values("from_s").groupby("run_id", sort=True):
        run = ts[ts["run_id"] == run_id]
        windows = list(fr.itertuples())
        for i, f in enumerate(windows):
            first = math.floor(f.from_s)
            last = math.floor(f.to_s) + (1 if f.kind == "kill" else 0)
            nxt = math.floor(windows[i + 1].from_s) if i + 1 < len(windows) else math.inf
            phases = {
                "before": run[run["second"] < first],
                "during": run[(run["second"] >= first) & (run["second"] <= last)],
                "after": run[(run["second"] > last + settle_s) & (run["second"] < nxt)],
            }
            row: dict[str, object] = {"run_id": run_id, "kind": f.kind, "target": f.target,
                                      "from_s": f.from_s, "to_s": f.to_s}
            for name, ph in phases.items():
                n = ph["requests"].sum()
                row[f"success_{name}"] = 1.0 - ph["errors"].sum() / n if n > 0 else math.nan
                lat = ph.loc[ph["requests"] > 0, latency_col]
                row[f"{latency_col}_{name}"] = float(lat.median()) if len(lat) else math.nan
            out.append(row)
    return pd.DataFrame(out)
