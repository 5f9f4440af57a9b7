"""Figures for the report. Each function takes computed DataFrames and returns
PNG bytes; nothing here computes a statistic."""

from __future__ import annotations

import io
import itertools
from collections.abc import Collection, Sequence

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

# Colour-blind-safe (Okabe-Ito), in the order configurations are ranked.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
           "#000000"]
# The hop figure's colours: the palette and four more as distinct (Paul Tol's
# wine, olive and indigo, and a brown), so that twelve hops need none twice.
HOP_PALETTE = [*PALETTE, "#882255", "#999933", "#332288", "#8C564B"]
INK = "#1f2933"
MUTED = "#7b8794"
GRID = "#e4e7eb"

plt.rcParams.update({
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.edgecolor": MUTED,
    "axes.labelcolor": INK,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": GRID,
    "grid.linewidth": 0.8,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "xtick.labelcolor": INK,
    "ytick.labelcolor": INK,
    "legend.frameon": False,
    "legend.fontsize": 8,
    "savefig.dpi": 130,
    "savefig.bbox": "tight",
})


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def to_png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", facecolor="white")
    plt.close(fig)
    return buf.getvalue()


def influence_bars(terms: pd.DataFrame, title: str) -> bytes:
    """Percent of variation per term (allocation of variation), largest first."""
    # Without replication the error has no share (NaN), not a share of 0.
    t = terms[(terms["term"] != "Intercept") & terms["percent"].notna()].copy()
    t["label"] = t["term"].replace({"Residual": "error (between runs)"})
    t = t.sort_values("percent", ascending=True)
    fig, ax = plt.subplots(figsize=(7.0, 0.42 * len(t) + 0.9))
    colours = [MUTED if lbl.startswith("error") else PALETTE[0] for lbl in t["label"]]
    bars = ax.barh(t["label"], t["percent"], color=colours, height=0.62)
    for b, v in zip(bars, t["percent"], strict=True):
        ax.text(b.get_width() + 0.8, b.get_y() + b.get_height() / 2, f"{v:.1f}%",
                va="center", fontsize=8, color=INK)
    ax.set_xlim(0, max(100.0, float(t["percent"].max()) * 1.12))
    ax.set_xlabel("share of the variation explained (%)")
    ax.grid(axis="y", visible=False)
    ax.set_title(title)
    return to_png(fig)


def boxplot(table: pd.DataFrame, response: str, label_col: str, order: Sequence[str],
            ylabel: str, title: str, flagged: pd.Series | None = None) -> bytes:
    """One box per configuration over its runs, with every run drawn as a dot;
    `flagged` (a boolean per row of table) marks the runs the load generator
    flagged, drawn as a cross and named in the legend."""
    rows = table.dropna(subset=[response])
    mark = (pd.Series(False, index=table.index) if flagged is None else flagged)
    mark = mark.reindex(rows.index).fillna(False).astype(bool)
    data = [rows.loc[rows[label_col] == lbl, response].to_numpy() for lbl in order]
    marks = [mark[rows[label_col] == lbl].to_numpy() for lbl in order]
    fig, ax = plt.subplots(figsize=(7.0, 0.45 * len(order) + 1.0))
    pos = np.arange(len(order))[::-1]
    ax.boxplot(data, positions=pos, orientation="horizontal", widths=0.55, showfliers=False,
               medianprops={"color": INK, "linewidth": 1.5},
               boxprops={"color": MUTED}, whiskerprops={"color": MUTED},
               capprops={"color": MUTED})
    rng = np.random.default_rng(0)
    labelled = False
    for i, (p, d, m) in enumerate(zip(pos, data, marks, strict=True)):
        y = p + rng.uniform(-0.12, 0.12, len(d))
        ax.scatter(d[~m], y[~m], s=18, color=colour(i), zorder=3,
                   alpha=0.9, edgecolors="white", linewidths=0.5)
        if m.any():
            ax.scatter(d[m], y[m], s=36, color=INK, marker="x", zorder=4, linewidths=1.2,
                       label=None if labelled else "flagged by the load generator")
            labelled = True
    if labelled:
        ax.legend(loc="best", fontsize="small")
    ax.set_yticks(pos, list(order))
    ax.set_xlabel(ylabel)
    ax.grid(axis="y", visible=False)
    ax.set_title(title)
    return to_png(fig)


def cdf(curves: dict[str, tuple[np.ndarray, np.ndarray]], xlabel: str, title: str) -> bytes:
    """Latency CDFs, one line per configuration, on a log latency axis."""
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    for i, (lbl, (x, p)) in enumerate(curves.items()):
        ax.plot(x, p, color=colour(i), linewidth=1.6, label=lbl)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_ylim(0, 1.0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of requests")
    ax.legend(loc="lower right")
    ax.set_title(title)
    return to_png(fig)


def timeseries(ts: pd.DataFrame, label_col: str, order: Sequence[str], latency_col: str,
               latency_label: str, title: str, flagged: Collection[str] = ()) -> bytes:
    """Latency and throughput per second, one thin line per run; a run whose
    run_id is in `flagged` (the load generator flagged it) is dashed."""
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7.0, 4.6), sharex=True)
    for i, lbl in enumerate(order):
        sub = ts[ts[label_col] == lbl]
        for j, (rid, run) in enumerate(sub.groupby("run_id", sort=True)):
            run = run.sort_values("second")
            kw = {"color": colour(i), "linewidth": 1.0, "alpha": 0.75,
                  "label": lbl if j == 0 else None,
                  "linestyle": "--" if rid in flagged else "-"}
            ax1.plot(run["second"], run[latency_col], **kw)
            ax2.plot(run["second"], run["rps"], **kw)
    ax1.set_ylabel(latency_label)
    ax2.set_ylabel("throughput (req/s)")
    ax2.set_xlabel("second of the measurement window (s)")
    ax1.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax1.set_title(title)
    return to_png(fig)


def scaling(ts: pd.DataFrame, replicas: pd.DataFrame, label_col: str, order: Sequence[str],
            latency_col: str, latency_label: str, title: str) -> bytes:
    """Latency and throughput per second above the replicas of each
    autoscaled group, one thin line per run, on one time axis."""
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(7.0, 6.4), sharex=True)
    groups = sorted(replicas["group"].unique())
    styles = ["-", "--", ":", "-."]
    for i, lbl in enumerate(order):
        sub = ts[ts[label_col] == lbl]
        for j, (_, run) in enumerate(sub.groupby("run_id", sort=True)):
            run = run.sort_values("second")
            kw = {"color": colour(i), "linewidth": 1.0, "alpha": 0.75,
                  "label": lbl if j == 0 else None}
            ax1.plot(run["second"], run[latency_col], **kw)
            ax2.plot(run["second"], run["rps"], **kw)
        rsub = replicas[replicas[label_col] == lbl]
        for (run_id, group), dec in rsub.groupby(["run_id", "group"], sort=True):
            dec = dec.sort_values("t_s")
            # The count before the first decision, then after each one,
            # held to the run's last second.
            end = ts.loc[ts["run_id"] == run_id, "second"].max()
            last = dec["t_s"].iloc[-1]
            tail_x = [end] if end == end and end > last else []
            x = np.concatenate([[dec["t_s"].iloc[0]], dec["t_s"].to_numpy(), tail_x])
            y = np.concatenate([[dec["current"].iloc[0]], dec["desired"].to_numpy(),
                                [dec["desired"].iloc[-1]] * len(tail_x)])
            ax3.step(x, y, where="post", color=colour(i), alpha=0.75, linewidth=1.2,
                     linestyle=styles[groups.index(group) % len(styles)])
    for k, g in enumerate(groups):
        ax3.plot([], [], color=MUTED, linestyle=styles[k % len(styles)], label=g)
    ax1.set_ylabel(latency_label)
    ax2.set_ylabel("throughput (req/s)")
    ax3.set_ylabel("replicas")
    ax3.yaxis.get_major_locator().set_params(integer=True)
    ax3.set_xlabel("second of the measurement window (s)")
    ax1.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax3.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), title="group")
    ax1.set_title(title)
    return to_png(fig)


def faults(success: pd.DataFrame, ts: pd.DataFrame, windows: pd.DataFrame, label_col: str,
           order: Sequence[str], latency_col: str, latency_label: str, title: str) -> bytes:
    """Success rate and latency per second, one thin line per run, with every
    fault window shaded (a kill as a vertical line)."""
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7.0, 4.8), sharex=True)
    for i, lbl in enumerate(order):
        runs = ts.loc[ts[label_col] == lbl, "run_id"].unique()
        for j, run_id in enumerate(sorted(runs)):
            kw = {"color": colour(i), "linewidth": 1.0, "alpha": 0.75,
                  "label": lbl if j == 0 else None}
            s = success[success["run_id"] == run_id]
            ax1.plot(s["second"], 100 * s["success"], **kw)
            r = ts[ts["run_id"] == run_id].sort_values("second")
            ax2.plot(r["second"], r[latency_col], **kw)
    kinds = sorted(windows["kind"].unique())
    hatches = ["", "//", "\\\\", ".."]
    # The same window in every run is drawn once; windows differ between
    # runs only by milliseconds of scheduling.
    seen: set[tuple[str, int, int]] = set()
    for w in windows.itertuples():
        key = (w.kind, round(w.from_s), round(w.to_s))
        if key in seen:
            continue
        seen.add(key)
        k = kinds.index(w.kind)
        for ax in (ax1, ax2):
            if w.to_s > w.from_s:
                ax.axvspan(w.from_s, w.to_s, color=MUTED, alpha=0.18, hatch=hatches[k % 4],
                           linewidth=0)
            else:
                ax.axvline(w.from_s, color=MUTED, linestyle="--", linewidth=1.0)
    for k, kind in enumerate(kinds):
        ax1.fill_between([], [], color=MUTED, alpha=0.18, hatch=hatches[k % 4],
                         label=f"{kind} (shaded)")
    ax1.set_ylabel("success rate (%)")
    ax1.set_ylim(-5, 105)
    ax2.set_ylabel(latency_label)
    ax2.set_xlabel("second of the measurement window (s)")
    ax1.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax1.set_title(title)
    return to_png(fig)


def interactions(means: pd.DataFrame, factors: Sequence[str], response: str, ylabel: str,
                 title: str) -> bytes:
    """Interaction plots: mean response per level of one factor, a line per
    level of another. Parallel lines mean no interaction."""
    pairs = list(itertools.combinations(factors, 2))
    ncol = min(3, len(pairs))
    nrow = int(np.ceil(len(pairs) / ncol))
    width = 4.6 if ncol == 1 else 7.0
    fig, axes = plt.subplots(nrow, ncol, figsize=(width, 3.0 * nrow), squeeze=False)
    for ax, (f1, f2) in zip(axes.flat, pairs, strict=False):
        m = means.groupby([f1, f2], observed=True, sort=True)[response].mean().reset_index()
        x_levels = list(dict.fromkeys(m[f1].astype(str)))
        for i, (lv, g) in enumerate(m.groupby(f2, observed=True, sort=True)):
            xs = [x_levels.index(str(v)) for v in g[f1]]
            ax.plot(xs, g[response], marker="o", color=colour(i), linewidth=1.6,
                    label=f"{f2.rsplit('.', 1)[-1]}={lv}")
        ax.set_xticks(range(len(x_levels)), x_levels)
        ax.margins(x=0.15)
        ax.set_xlabel(f1.rsplit(".", 1)[-1])
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(pairs):]:
        ax.set_visible(False)
    fig.suptitle(title, x=0.01, ha="left", fontsize=10, fontweight="bold")
    fig.tight_layout()
    return to_png(fig)


def qq(points: pd.DataFrame, ylabel: str, title: str) -> bytes:
    fig, ax = plt.subplots(figsize=(4.6, 3.6))
    ax.scatter(points["theoretical"], points["sample"], s=20, color=PALETTE[0], zorder=3)
    ax.plot(points["theoretical"], points["line"], color=MUTED, linewidth=1.2)
    ax.set_xlabel("normal quantile")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return to_png(fig)


def response_curve(summary: pd.DataFrame, x: str, series: str | None, xlabel: str,
                   ylabel: str, title: str) -> bytes:
    """Mean response with its CI against a numeric factor (latency vs load)."""
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    groups = [("", summary)] if series is None else list(
        summary.groupby(series, observed=True, sort=False))
    for i, (lbl, g) in enumerate(groups):
        g = g.sort_values(x)
        ax.errorbar(g[x], g["mean"], yerr=[g["mean"] - g["mean_ci_low"],
                                           g["mean_ci_high"] - g["mean"]],
                    marker="o", color=colour(i), capsize=3, linewidth=1.6,
                    label=str(lbl) if lbl != "" else None)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if series is not None:
        ax.legend()
    ax.set_title(title)
    return to_png(fig)


def hop_breakdown(summary: pd.DataFrame, label_col: str, order: Sequence[str],
                  title: str) -> bytes:
    """Where a request's time goes, hop by hop: one stacked bar per
    configuration, a solid segment per hop for the component's own work, a
    hatched one for the wire (encoding, network, TLS) on the way to it, and
    a cross-hatched one for the proxies on that way (when they emit spans);
    a diamond at the mean traced request, where request_ms is known.

    summary has one row per configuration and hop, in the order to draw:
    label_col, hop, self_ms, wire_ms, and optionally proxy_ms, parallel (a
    hop with a share above 0 is named "(parallel)"), other (the row of the
    hops folded together, drawn grey) and request_ms (one per
    configuration). At most len(HOP_PALETTE) hops besides `other`.
    """
    hops = summary["hop"].drop_duplicates().tolist()
    rest = set(summary.loc[summary["other"], "hop"]) if "other" in summary else set()
    if len(hops) - len(rest) > len(HOP_PALETTE):
        raise ValueError(f"{len(hops)} hops, more than the {len(HOP_PALETTE)} colours: "
                         "fold the smallest together first")
    parallel = (set(summary.loc[summary["parallel"] > 0, "hop"]) if "parallel" in summary
                else set())
    proxies = "proxy_ms" in summary and bool((summary["proxy_ms"] > 0).any())
    labels = [lbl for lbl in order if lbl in set(summary[label_col])]
    entries = len(hops) + 4
    fig, ax = plt.subplots(figsize=(7.0, max(0.6 + 0.45 * max(len(labels), 1),
                                             0.8 + 0.2 * entries)))
    left = np.zeros(len(labels))
    handles: list[Artist] = []
    colours = iter(HOP_PALETTE)
    for hop in hops:
        c = MUTED if hop in rest else next(colours)
        sub = summary[summary["hop"] == hop].set_index(label_col).reindex(labels)
        wire = sub["wire_ms"].fillna(0).to_numpy()
        own = sub["self_ms"].fillna(0).to_numpy()
        ax.barh(labels, wire, left=left, color=c, alpha=0.35, hatch="//",
                edgecolor=c, linewidth=0.0)
        left += wire
        if proxies:
            proxy = sub["proxy_ms"].fillna(0).to_numpy()
            ax.barh(labels, proxy, left=left, color=c, alpha=0.6, hatch="xx",
                    edgecolor=c, linewidth=0.0)
            left += proxy
        ax.barh(labels, own, left=left, color=c)
        left += own
        handles.append(Patch(color=c, label=f"{hop} (parallel)" if hop in parallel else hop))
    key: list[Artist] = [Patch(facecolor="white", edgecolor=INK, label="own work"),
                         Patch(facecolor="white", edgecolor=INK, hatch="//",
                               label="wire on the way to it")]
    if proxies:
        key.append(Patch(facecolor="white", edgecolor=INK, hatch="xx",
                         label="proxies on the way"))
    if "request_ms" in summary:
        took = summary.drop_duplicates(label_col).set_index(label_col)["request_ms"]
        took = took.reindex(labels)
        if took.notna().any():
            ax.plot(took.to_numpy(), labels, linestyle="none", marker="D", markersize=6,
                    markerfacecolor="white", markeredgecolor=INK, markeredgewidth=1.2)
            key.append(Line2D([], [], linestyle="none", marker="D", markersize=6,
                              markerfacecolor="white", markeredgecolor=INK,
                              markeredgewidth=1.2, label="the traced request (mean)"))
    ax.invert_yaxis()
    ax.set_xlabel("time per traced request (ms), mean")
    ax.legend(handles=[*key, Patch(visible=False, label=""), *handles], loc="upper left",
              bbox_to_anchor=(1.0, 1.0))
    ax.set_title(title)
    return to_png(fig)


def role_cpu(summary: pd.DataFrame, label_col: str, order: Sequence[str], title: str) -> bytes:
    """CPU per request by role: one stacked bar per configuration, a segment
    per role (host, sidecar, node-proxy, telemetry, in summary's order).

    summary has one row per configuration and role: label_col, role, cpu_ms.
    """
    roles = list(dict.fromkeys(summary["role"]))
    labels = [lbl for lbl in order if lbl in set(summary[label_col])]
    fig, ax = plt.subplots(figsize=(7.0, 0.6 + 0.45 * max(len(labels), 1)))
    left = np.zeros(len(labels))
    for i, role in enumerate(roles):
        ms = summary[summary["role"] == role].set_index(label_col)["cpu_ms"].reindex(labels)
        v = ms.fillna(0).to_numpy()
        ax.barh(labels, v, left=left, color=colour(i), label=role,
                hatch="//" if role == "telemetry" else None, edgecolor="white", linewidth=0.5)
        left += v
    ax.invert_yaxis()
    ax.set_xlabel("CPU per request (ms, median over runs)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), title="role")
    ax.set_title(title)
    return to_png(fig)
