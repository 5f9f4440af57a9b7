"""Names, units and labels of the run-level metrics."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    unit: str
    # True when smaller is better: ranks configurations in the answer table.
    lower_is_better: bool = True


METRICS: dict[str, Metric] = {
    m.name: m
    for m in [
        Metric("p50_ms", "p50 latency", "ms"),
        Metric("p90_ms", "p90 latency", "ms"),
        Metric("p95_ms", "p95 latency", "ms"),
        Metric("p99_ms", "p99 latency", "ms"),
        Metric("p999_ms", "p99.9 latency", "ms"),
        Metric("mean_ms", "mean latency", "ms"),
        Metric("max_ms", "max latency", "ms"),
        Metric("throughput_rps", "throughput", "req/s", lower_is_better=False),
        Metric("error_rate_pct", "error rate", "%"),
        Metric("cpu_s_per_1k", "CPU per 1000 requests", "CPU·s/1000 req"),
    ]
}

# The headline metrics every report shows, in this order.
CORE_METRICS: list[str] = [
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "mean_ms",
    "throughput_rps",
    "error_rate_pct",
    "cpu_s_per_1k",
]

# experiment.json's response.metric may use the summary.json spelling.
ALIASES: dict[str, str] = {
    "rps": "throughput_rps",
    "throughput": "throughput_rps",
    "error_rate": "error_rate_pct",
    "errors": "error_rate_pct",
    "cpu_s_per_1000": "cpu_s_per_1k",
    "mean": "mean_ms",
    "p50": "p50_ms",
    "p90": "p90_ms",
    "p95": "p95_ms",
    "p99": "p99_ms",
    "p999": "p999_ms",
    "median_ms": "p50_ms",
}


def canonical(name: str) -> str:
    """The canonical metric name for `name`, or `name` itself when unknown."""
    return ALIASES.get(name, name)


def unit_of(name: str) -> str:
    m = METRICS.get(name)
    if m is not None:
        return m.unit
    # The result store puts the unit in the name; honour it for ad-hoc columns.
    for suffix, unit in (("_ms", "ms"), ("_us", "µs"), ("_s", "s"), ("_bytes", "bytes")):
        if name.endswith(suffix):
            return unit
    return ""


def label_of(name: str) -> str:
    m = METRICS.get(name)
    return m.label if m is not None else name


def lower_is_better(name: str) -> bool:
    m = METRICS.get(name)
    return True if m is None else m.lower_is_better
