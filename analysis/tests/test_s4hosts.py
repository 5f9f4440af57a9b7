"""S4 across hosts: per-placement summaries, grpc ÷ netrpc, the link's cost
and the verdict, on hand-made runs checked against scipy."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from test_replications_compute import assert_separated_ratio, assert_summary, study

from svclab_analysis.replications import s4hosts

ONE = json.dumps({"laptop1": {"groups": ["frontend", "ops"]}}, sort_keys=True)
TWO = json.dumps({"laptop1": {"groups": ["frontend"]}, "laptop2": {"groups": ["ops"]}},
                 sort_keys=True)
BASE = {"grpc": 0.8, "netrpc": 0.4, "protorpc": 0.35}
LINK = {"grpc": 6.0, "netrpc": 5.0, "protorpc": 5.2}  # what the link adds per transport


def ms(tr: str, hosts: str, rep: int, op_extra: float = 0.0) -> float:
    return BASE[tr] + op_extra + (LINK[tr] if hosts == TWO else 0.0) + 0.01 * rep * (
        3 if hosts == TWO else 1)


def metrics(lv: dict[str, str], rep: int) -> dict[str, dict[str, float]]:
    tr, hosts = lv["deploy.transport"], lv["deploy.hosts"]
    return {"total": {"mean_ms": ms(tr, hosts, rep, 0.1)},
            "void": {"mean_ms": ms(tr, hosts, rep)},
            "movie": {"mean_ms": ms(tr, hosts, rep, 0.3)}}


REPS = 4


def data() -> s4hosts.StudyData:
    return study({"deploy.transport": ["grpc", "netrpc", "protorpc"],
                  "deploy.hosts": [ONE, TWO]}, REPS, metrics,
                 bottleneck=lambda lv, rep: rep == 2 and lv["deploy.hosts"] == TWO)


def runs(tr: str, hosts: str, extra: float = 0.0) -> list[float]:
    return [ms(tr, hosts, rep, extra) for rep in range(1, REPS + 1)]


def test_hosts_label() -> None:
    assert (s4hosts.hosts_label(ONE), s4hosts.hosts_label(TWO)) == ("one host", "two hosts")
    assert s4hosts.hosts_label(json.dumps({"a": {}, "b": {}, "c": {}})) == "3 hosts"
    assert s4hosts.hosts_label("not json") == "not json"


def test_compute() -> None:
    r = s4hosts.compute(data())
    assert [(x.operation, x.hosts) for x in r.rows] == [
        ("all operations", "one host"), ("all operations", "two hosts"),
        ("void", "one host"), ("void", "two hosts"), ("movie", "one host"), ("movie", "two hosts")]
    void_two = r.rows[3]
    assert [t for t, _ in void_two.transports] == ["grpc", "netrpc", "protorpc"]
    for t, s in void_two.transports:
        assert_summary(s, runs(t, TWO))
    assert_separated_ratio(void_two.ratio, runs("grpc", TWO), runs("netrpc", TWO))
    assert_separated_ratio(r.rows[2].ratio, runs("grpc", ONE), runs("netrpc", ONE))
    # The link's cost: Welch's interval on two hosts − one host, from scipy.
    cost = {(c.operation, c.transport): c.added for c in r.link_costs}
    a, b = np.array(runs("netrpc", TWO, 0.3)), np.array(runs("netrpc", ONE, 0.3))
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    d = cost[("movie", "netrpc")]
    assert (d.diff, d.lo, d.hi) == pytest.approx((a.mean() - b.mean(), ci.low, ci.high))
    assert d.diff == pytest.approx(LINK["netrpc"] + 0.02 * 2.5)
    assert len(r.link_costs) == 3 * 3
    # grpc ÷ netrpc over the operations (not the total row), per placement.
    one = [np.median(runs("grpc", ONE, e)) / np.median(runs("netrpc", ONE, e)) for e in (0, 0.3)]
    two = [np.median(runs("grpc", TWO, e)) / np.median(runs("netrpc", TWO, e)) for e in (0, 0.3)]
    assert r.ratio_range["one host"] == pytest.approx((min(one), max(one)))
    assert r.ratio_range["two hosts"] == pytest.approx((min(two), max(two)))
    # Four runs a side, all grpc above all netrpc: the bootstrap interval is above 1.
    assert r.verdict == "holds"
    assert (r.flagged, r.runs) == (3, 3 * 2 * REPS)


def test_verdict_when_netrpc_loses_across_the_link() -> None:
    def flipped(lv: dict[str, str], rep: int) -> dict[str, dict[str, float]]:
        tr, hosts = lv["deploy.transport"], lv["deploy.hosts"]
        v = ms(tr, hosts, rep)
        if hosts == TWO and tr == "netrpc":
            v += 10.0  # net/rpc far slower across the link
        return {"void": {"mean_ms": v}}

    r = s4hosts.compute(study({"deploy.transport": ["grpc", "netrpc"],
                               "deploy.hosts": [ONE, TWO]}, REPS, flipped))
    assert r.verdict == "does not hold"
    section = s4hosts.render(r)
    (claim,) = section.claims
    assert (claim.study, claim.claim, claim.verdict) == ("S4", s4hosts.CLAIM, "does not hold")
    assert "| void | two hosts |" in section.text


def test_one_run_a_side_has_no_verdict() -> None:
    r = s4hosts.compute(study({"deploy.transport": ["grpc", "netrpc"],
                               "deploy.hosts": [ONE, TWO]}, 1, metrics))
    assert r.verdict is None
    assert s4hosts.render(r).claims == ()


def test_render() -> None:
    section = s4hosts.render(s4hosts.compute(data()))
    assert "| operation | hosts | grpc (ms) | netrpc (ms) | protorpc (ms) |" in section.text
    assert "**What the link adds**" in section.text
    assert "Runs flagged by the generator's self-audit: 3 of 24." in section.text
    (claim,) = section.claims
    assert claim.paper == s4hosts.PAPER and claim.verdict == "holds"
