"""The report's figures: the data each plot needs, drawn by plots.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .. import plots
from ..faults import load_faults, success_over_time
from ..metrics import label_of
from ..results import (
    hdr_quantiles,
    load_hops,
    load_samples,
    load_scaling,
    load_timeseries,
    replicas_over_time,
)
from ..stats import describe, qq_points
from .analysis import CONFIG, Analysis, config_labels


def figures(a: Analysis) -> dict[str, bytes]:
    """Draw every plot; a plot whose data is absent is left out."""
    figs: dict[str, bytes] = {}
    u = a.unit
    ylab = f"{a.mlabel} ({u})" if u else a.mlabel
    order = list(a.ranked[CONFIG])
    scale = "log " if a.log else ""
    if a.main is not None:
        figs["influence"] = plots.influence_bars(
            a.main.terms, f"What drives {scale}{a.mlabel}: allocation of variation")
    elif a.anova_table is not None:
        figs["influence"] = plots.influence_bars(
            a.anova_table, f"What drives {scale}{a.mlabel}: share of the sum of squares")
    figs["box"] = plots.boxplot(a.table, a.metric, CONFIG, order, ylab,
                                f"{a.mlabel} per run, by configuration",
                                flagged=a.table["run_id"].isin(a.flagged))

    curves, a.cdf_source = latency_curves(a, order)
    if curves:
        figs["cdf"] = plots.cdf(curves, "latency (ms, log scale)",
                            f"Latency distribution ({a.operation})")
    ts = load_timeseries(a.exp)
    if not ts.empty and "operation" in ts.columns:
        ts = ts[ts["operation"] == a.operation].copy()
        col = a.metric if a.metric in ("p50_ms", "p90_ms", "p99_ms") else "p99_ms"
        if not ts.empty and col in ts.columns:
            ts[CONFIG] = config_labels(ts, a.factors)
            figs["timeseries"] = plots.timeseries(ts, CONFIG, order, col,
                                                  f"{label_of(col)} (ms)", "Over time, per run",
                                                  flagged=a.flagged)
            reps = replicas_over_time(load_scaling(a.exp))
            if not reps.empty:
                reps[CONFIG] = config_labels(reps, a.factors)
                figs["scaling"] = plots.scaling(ts, reps, CONFIG, order, col,
                                                f"{label_of(col)} (ms)",
                                                "Autoscaling: replicas beside latency and "
                                                "throughput, per run")
            windows = load_faults(a.exp)
            if not windows.empty:
                figs["faults"] = plots.faults(success_over_time(ts), ts, windows, CONFIG,
                                              order, col, f"{label_of(col)} (ms)",
                                              "Faults: success rate and latency around "
                                              "each fault, per run")
    hops = hop_summary(load_hops(a.exp), a)
    if not hops.empty:
        a.hops = top_hops(hops)
        figs["hops"] = plots.hop_breakdown(a.hops, CONFIG, order,
                                           "Where a request's time goes, hop by hop (traces)")
    if not a.role_cpu.empty and a.role_cpu["role"].nunique() > 1:
        figs["roles"] = plots.role_cpu(a.role_cpu, CONFIG, order,
                                       "Where the CPU goes, per request, by role")
    if len(a.factors) >= 2:
        figs["interactions"] = plots.interactions(
            a.table.dropna(subset=[a.metric]), a.factors[:4], a.metric, ylab,
            f"Interactions: mean {a.mlabel}")
    for f in a.factors:
        lv = pd.to_numeric(pd.Series(a.table[f].astype(str).unique()), errors="coerce")
        if len(lv) >= 3 and not lv.isna().any():
            others = [g for g in a.factors if g != f]
            d = describe(a.table.dropna(subset=[a.metric]), [a.metric], by=[f, *others],
                         confidence=a.confidence)
            d[f] = pd.to_numeric(d[f])
            d["series"] = config_labels(d, others) if others else ""
            # The centre and interval of the tables (stats.run_interval), which
            # never reach below zero for a positive metric.
            d = d.assign(mean=d["center"], mean_ci_low=d["center_ci_low"],
                         mean_ci_high=d["center_ci_high"])
            figs[f"curve_{f}"] = plots.response_curve(
                d, f, "series" if others else None, f.rsplit(".", 1)[-1], ylab,
                f"{a.mlabel} against {f.rsplit('.', 1)[-1]} ({d['center_kind'].iloc[0]}, "
                f"{round(100 * a.confidence)}% CI)")
    if len(a.residuals) >= 3 and np.ptp(a.residuals) > 0:
        rl = f"residual ({'log ' + u if a.log else u})" if u else "residual"
        figs["qq"] = plots.qq(qq_points(a.residuals), rl, "Normal QQ plot of run residuals")
    return figs


def latency_curves(
    a: Analysis, order: list[str]
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], str]:
    """CDF curves per configuration from the best source available: raw
    samples, else HDR logs, else the percentiles in summary.json. Returns the
    curves and a phrase naming the source."""
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    samples = load_samples(a.exp, a.operation)
    if not samples.empty:
        samples[CONFIG] = config_labels(samples, a.factors)
        for c in order:
            x = np.sort(samples.loc[samples[CONFIG] == c, "latency_ms"].to_numpy())
            if len(x):
                curves[c] = (x, np.arange(1, len(x) + 1) / len(x))
        if curves:
            return curves, "from the per-request samples (samples.parquet)"
    qs = np.concatenate([np.linspace(0.0, 0.99, 100), [0.995, 0.999, 0.9999]])
    for c in order:
        dirs = a.table.loc[a.table[CONFIG] == c, "run_id"]
        paths = [Path(d) / "latency.hlog" for d in
                 a.exp.runs.set_index("run_id").loc[dirs, "dir"]]
        v = hdr_quantiles(paths, a.operation, qs)
        if v is not None:
            curves[c] = (v, qs)
    if curves:
        return curves, "from the HDR histogram logs (latency.hlog)"
    pcols = [("min_ms", 0.0), ("p50_ms", 0.5), ("p90_ms", 0.9), ("p95_ms", 0.95),
             ("p99_ms", 0.99), ("p999_ms", 0.999), ("max_ms", 1.0)]
    for c in order:
        rows = a.table[a.table[CONFIG] == c]
        pts = [(rows[col].median(), q) for col, q in pcols if col in rows and
               rows[col].notna().any()]
        if len(pts) >= 3:
            curves[c] = (np.array([p[0] for p in pts]), np.array([p[1] for p in pts]))
    return curves, ("only from the percentiles in summary.json (median over runs), so "
                    "approximate; `load.raw_samples = true` gives the full curve")


# The hops the figure names, each in a colour of its own; the rest share one
# bar segment (top_hops).
TOP_HOPS = len(plots.HOP_PALETTE)

# Two calls of one request overlap when one starts more than this before the
# other's server span ends. Calls made one after another cannot: the next
# starts after the caller got the last one's reply. Jaeger keeps microseconds.
OVERLAP_S = 1e-6


def hop_summary(hops: pd.DataFrame, a: Analysis) -> pd.DataFrame:
    """Each hop's time per traced request (ms) per configuration: its own,
    wire and proxy time summed over every call of it in the configuration's
    traced requests (hops.parquet), divided by the number of those requests.

    So a hop called with probability p counts p times its time per call,
    one called twice counts twice, and the hops of calls made one after
    another add up to the request's time. One row per configuration and hop,
    in order of depth: depth, self_ms, wire_ms, proxy_ms, calls (the hop's
    calls per traced request), parallel (the share of its calls that ran at
    the same time as another call of the same request and depth: their
    times overlap, so they add up to more than the request took) and
    request_ms (the configuration's mean traced request, the entry's server
    span and its proxy; NaN for hops.parquet written without server_us).
    """
    if hops.empty:
        return hops
    hops = hops.copy()
    hops[CONFIG] = config_labels(hops, a.factors)
    if "run_id" not in hops:
        hops["run_id"] = ""
    # Proxies that emit their own spans (Envoy) take proxy_us of the wire;
    # the rest of it is the legs the proxies do not see. Runs without them
    # (or written before the column existed) have none.
    proxy = hops["proxy_us"].fillna(0.0) if "proxy_us" in hops else pd.Series(0.0, index=hops.index)
    hops["proxy_us"] = proxy.clip(lower=0)
    hops["legs_us"] = (hops["wire_us"] - hops["proxy_us"]).clip(lower=0)
    hops.loc[hops["wire_us"] <= 0, "legs_us"] = 0.0  # the entry: its client is not traced
    # self_us is the server span less its client spans; a component whose
    # calls overlapped had them subtracted more than once, below zero.
    hops["self_us"] = hops["self_us"].clip(lower=0)
    hops["overlapped"] = overlapped(hops)
    requests = hops.drop_duplicates([CONFIG, "run_id", "trace_id"]).groupby(
        CONFIG, sort=False).size()
    g = hops.groupby([CONFIG, "hop"], sort=False)
    out = g.agg(depth=("depth", "min"), self_us=("self_us", "sum"), wire_us=("legs_us", "sum"),
                proxy_us=("proxy_us", "sum"), calls=("hop", "size"),
                parallel=("overlapped", "mean")).reset_index()
    n = out[CONFIG].map(requests).astype(float)
    out["self_ms"] = out["self_us"] / n / 1e3
    out["wire_ms"] = out["wire_us"] / n / 1e3
    out["proxy_ms"] = out["proxy_us"] / n / 1e3
    out["calls"] = out["calls"] / n
    entry = hops[hops["depth"] == 0]
    if "server_us" in entry:
        took = (entry["server_us"] + entry["proxy_us"]).groupby(entry[CONFIG]).mean()
        out["request_ms"] = out[CONFIG].map(took) / 1e3
    else:
        out["request_ms"] = np.nan
    out = out.sort_values(["depth", "hop"], kind="stable").reset_index(drop=True)
    return out[[CONFIG, "hop", "depth", "self_ms", "wire_ms", "proxy_ms", "calls", "parallel",
                "request_ms"]]


def overlapped(hops: pd.DataFrame) -> pd.Series:
    """Whether each call (row of hops.parquet) ran at the same time as
    another call of its traced request at the same depth: calls a component
    made in parallel, or calls below parallel ones. False where hops.parquet
    has no start_s and server_us."""
    if "start_s" not in hops or "server_us" not in hops:
        return pd.Series(False, index=hops.index)
    key = ["run_id", "trace_id", "depth"]
    d = hops[key].assign(start=hops["start_s"], end=hops["start_s"] + hops["server_us"] / 1e6)
    d = d.sort_values([*key, "start"], kind="stable")
    g = d.groupby(key, sort=False)
    # Sorted by start, a call overlaps an earlier one when it starts before
    # the latest end so far, and a later one when it ends after the next start.
    before = d.assign(latest=g["end"].cummax()).groupby(key, sort=False)["latest"].shift()
    after = g["start"].shift(-1)
    ov = (d["start"] < before - OVERLAP_S) | (d["end"] > after + OVERLAP_S)
    return ov.reindex(hops.index)


def top_hops(summary: pd.DataFrame, n: int = TOP_HOPS) -> pd.DataFrame:
    """hop_summary with its n largest hops and the others summed into one
    row per configuration, hop "other (k hops)", last and with `other` set.
    A hop's size is its largest share of a configuration's bar, so that the
    hops of a configuration whose hops are all short (a monolith beside a
    split deployment) are named as well."""
    summary = summary.assign(other=False)
    took = summary["self_ms"] + summary["wire_ms"] + summary["proxy_ms"]
    share = (took / took.groupby(summary[CONFIG]).transform("sum")).fillna(0.0)
    size = share.groupby(summary["hop"]).max()
    if len(size) <= n:
        return summary
    ranked = size.reset_index(name="size").sort_values(["size", "hop"], ascending=[False, True])
    keep = set(ranked["hop"].head(n))
    rest = summary[~summary["hop"].isin(keep)]
    other = rest.assign(overlapping=rest["parallel"] * rest["calls"]).groupby(
        CONFIG, sort=False).agg(depth=("depth", "min"), self_ms=("self_ms", "sum"),
                                wire_ms=("wire_ms", "sum"), proxy_ms=("proxy_ms", "sum"),
                                calls=("calls", "sum"), overlapping=("overlapping", "sum"),
                                request_ms=("request_ms", "first")).reset_index()
    other["parallel"] = other["overlapping"] / other["calls"]
    other["hop"] = f"other ({len(size) - n} hops)"
    other["other"] = True
    return pd.concat([summary[summary["hop"].isin(keep)], other[summary.columns]],
                     ignore_index=True)
