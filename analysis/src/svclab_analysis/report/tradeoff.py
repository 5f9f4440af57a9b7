"""Latency read beside errors.

A configuration that fails fast looks quick: in S1, latency fell at 800
virtual users because 74% of requests failed. So a latency winner is never
shown without its error rate, and configurations whose latency is better
while their error rate is higher are named. Pure computation on the ranked
per-configuration table (``Analysis.ranked``): no text layout, no plots.
"""

from __future__ import annotations

import pandas as pd

from ..formatting import num, with_unit
from ..metrics import label_of, unit_of

CONFIG = "configuration"
# Error rates closer than this (percentage points) are not called a rise:
# one failed request in a few thousand is not a trade-off.
ERROR_RISE_PP = 1.0
MAX_PAIRS = 5  # pairs listed in one warning


def is_latency(metric: str) -> bool:
    """Whether a metric is a latency (fast failures flatter it)."""
    return unit_of(metric) == "ms"


def winner_errors(ranked: pd.DataFrame, metric: str) -> str:
    """The clause that goes after the winner of a latency metric: its error
    rate, and the lowest error rate among the configurations when that is
    lower. Empty for other metrics."""
    if not is_latency(metric) or "error_rate_pct" not in ranked or ranked.empty:
        return ""
    best = ranked.iloc[0]
    err = float(best["error_rate_pct"])
    if err != err:
        return ""
    text = f" Its error rate is **{num(err)}%**"
    low = ranked.loc[ranked["error_rate_pct"].idxmin()]
    if float(low["error_rate_pct"]) + ERROR_RISE_PP < err:
        text += (f", against {num(float(low['error_rate_pct']))}% for {low[CONFIG]}: "
                 "its speed may be fast failures")
    return text + "."


def faster_but_failing(ranked: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Pairs (faster, slower) of configurations where the faster one has an
    error rate more than ERROR_RISE_PP higher: columns faster, slower,
    mean_faster, mean_slower, err_faster, err_slower; the largest error
    rise first."""
    cols = ["faster", "slower", "mean_faster", "mean_slower", "err_faster", "err_slower"]
    if not is_latency(metric) or "error_rate_pct" not in ranked:
        return pd.DataFrame(columns=cols)
    rows = []
    r = ranked.dropna(subset=["mean", "error_rate_pct"])
    for f in r.itertuples():
        for s in r.itertuples():
            if f.mean < s.mean and f.error_rate_pct > s.error_rate_pct + ERROR_RISE_PP:
                rows.append((getattr(f, CONFIG), getattr(s, CONFIG), f.mean, s.mean,
                             f.error_rate_pct, s.error_rate_pct))
    out = pd.DataFrame(rows, columns=cols)
    if out.empty:
        return out
    rise = out["err_faster"] - out["err_slower"]
    return out.assign(_rise=rise).sort_values("_rise", ascending=False).drop(columns="_rise")


def warnings(ranked: pd.DataFrame, metric: str) -> list[str]:
    """One warning naming where latency improves while errors grow."""
    pairs = faster_but_failing(ranked, metric)
    if pairs.empty:
        return []
    u, label = unit_of(metric), label_of(metric)
    items = [f"{p.faster} ({with_unit(p.mean_faster, u)}, {num(p.err_faster)}% errors) "
             f"vs {p.slower} ({with_unit(p.mean_slower, u)}, {num(p.err_slower)}% errors)"
             for p in pairs.head(MAX_PAIRS).itertuples()]
    more = f" and {len(pairs) - MAX_PAIRS} more" if len(pairs) > MAX_PAIRS else ""
    return [f"{label} improves while errors grow: " + "; ".join(items) + more
            + ". Failed requests are often fast; compare served requests, not latency alone"]
