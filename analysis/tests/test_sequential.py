"""The sequential rule (issue 33, section 2): the confidence sequence's closed
form against the martingale integrated with scipy, and its guarantees by
simulation. The numbers the simulations print are the ones docs/ANALYSIS.md
states ("Stopping when decided")."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats
from statsmodels.stats.power import TTestPower

from svclab_analysis import questions as qs
from svclab_analysis.sequential import (
    MIXTURE_C2,
    confidence_sequence,
    halfwidth_factor,
    mixture_martingale,
    running_bounds,
)

SEQUENCES = 1000
ALPHA = 0.05
# A mesh that costs 10% (ratio 1.10) when runs of one configuration vary by
# 7% (sd of ln y): each block's log ratio has sd √2·ln 1.07, and the
# standardised effect ln 1.10 / (√2·ln 1.07) is 0.996.
RATIO = 1.10
RUN_SD = math.log(1.07)
BUDGET_BLOCKS = 30


def integrated_martingale(x: np.ndarray, mu: float, c2: float) -> float:
    """M_n(μ) from its definition: the likelihood ratio of the scale-invariant
    statistics, mixing N(θ, 1) over θ ~ N(0, 1/c²) and the scale a over
    a^(n−1) da, integrated numerically."""
    z = np.asarray(x, dtype=float) - mu
    z = z / np.sqrt(np.mean(z * z))  # the ratio is scale-free; keep exp() in range
    n = len(z)
    s, v = float(np.sum(z)), float(np.sum(z * z))

    def num(theta: float, a: float) -> float:
        prior = math.sqrt(c2 / (2 * math.pi)) * math.exp(-c2 * theta * theta / 2)
        return prior * math.exp(-(a * a * v - 2 * a * theta * s + n * theta * theta) / 2) \
            * a ** (n - 1)

    top, _ = integrate.dblquad(num, 0, 12, -12, 12, epsabs=1e-13, epsrel=1e-10)
    bottom, _ = integrate.quad(lambda a: math.exp(-a * a * v / 2) * a ** (n - 1), 0, 12,
                               epsabs=1e-13, epsrel=1e-10)
    return top / bottom


@pytest.mark.parametrize("n", [4, 6, 11])
def test_closed_form_is_the_mixture_martingale(n):
    rng = np.random.default_rng(n)
    x = rng.normal(0.3, 1.0, n)
    cs = confidence_sequence(x, 1 - ALPHA)
    for bound in (cs.low, cs.high):
        # The interval's ends are where the evidence against μ reaches 1/α.
        assert mixture_martingale(x, bound) == pytest.approx(1 / ALPHA, rel=1e-9)
        assert integrated_martingale(x, bound, MIXTURE_C2) == pytest.approx(1 / ALPHA, rel=1e-6)
    inside = integrated_martingale(x, float(np.mean(x)), MIXTURE_C2)
    assert inside < 1 / ALPHA


def test_running_bounds_are_confidence_sequence_per_prefix():
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, (3, 12))
    lo, hi = running_bounds(x, 0.9)
    for i in range(3):
        for n in (1, 3, 4, 12):
            cs = confidence_sequence(x[i, :n], 0.9)
            assert (lo[i, n - 1], hi[i, n - 1]) == pytest.approx((cs.low, cs.high))
    # Wider than a fixed t interval, which is the price of looking every block.
    assert halfwidth_factor(10, 0.05) > stats.t.ppf(0.975, 9) / math.sqrt(10)


def first_decision(decided: np.ndarray) -> np.ndarray:
    """The 1-based block of each sequence's first decision; 0 when none."""
    return np.where(decided.any(axis=1), decided.argmax(axis=1) + 1, 0)


def test_null_effect_is_wrongly_decided_at_most_alpha_of_the_time():
    rng = np.random.default_rng(33)
    d = rng.normal(0.0, math.sqrt(2) * RUN_SD, (SEQUENCES, 60))
    lo, hi = running_bounds(d, 1 - ALPHA)
    wrong = float(((lo > 0) | (hi < 0)).any(axis=1).mean())
    print(f"null effect: {wrong:.3f} of {SEQUENCES} sequences of 60 blocks decided")
    assert wrong <= ALPHA
    # A fixed t interval checked after every block would not be safe: that
    # is why the sequence is needed.
    n = np.arange(1, 61)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.cumsum(d, axis=1) / n
        sd = np.sqrt((np.cumsum(d * d, axis=1) - n * mean**2) / (n - 1))
        half = stats.t.ppf(1 - ALPHA / 2, n - 1) * sd / np.sqrt(n)
    naive = float((np.abs(mean[:, 1:]) > half[:, 1:]).any(axis=1).mean())
    print(f"a fixed t interval looked at after every block: {naive:.3f} decided")
    assert naive > 2 * ALPHA


def test_ratio_at_the_margin_is_claimed_within_at_most_alpha():
    # The claim "ratio ≤ 1.10" is false at exactly 1.10 (the hardest case).
    rng = np.random.default_rng(34)
    d = rng.normal(math.log(1.10), math.sqrt(2) * RUN_SD, (SEQUENCES, 60))
    _, hi = running_bounds(d, 1 - ALPHA)
    claimed = float((np.exp(hi) <= 1.10).any(axis=1).mean())
    assert claimed <= ALPHA


def sequential_against_fixed(effect: float, sd: float, budget: int,
                             seed: int) -> tuple[float, float, int]:
    """(power within the budget, median blocks to a decision, blocks a fixed
    paired t design of that power needs) for a true log ratio `effect`."""
    rng = np.random.default_rng(seed)
    d = rng.normal(effect, sd, (SEQUENCES, budget))
    lo, hi = running_bounds(d, 1 - ALPHA)
    first = first_decision((lo > 0) | (hi < 0))
    power = float((first > 0).mean())
    median = float(np.median(np.where(first > 0, first, budget)))
    fixed = math.ceil(TTestPower().solve_power(effect_size=effect / sd, alpha=ALPHA,
                                               power=power, alternative="two-sided"))
    return power, median, fixed


def test_real_effect_decides_sooner_than_a_fixed_design_of_the_same_power():
    sd = math.sqrt(2) * RUN_SD
    power, median, fixed = sequential_against_fixed(math.log(RATIO), sd, BUDGET_BLOCKS, 35)
    print(f"ratio {RATIO}, run sd {RUN_SD:.4f}: power {power:.3f} within {BUDGET_BLOCKS} "
          f"blocks, median {median:g} blocks ({2 * median:g} runs); fixed design of the "
          f"same power: {fixed} blocks ({2 * fixed} runs)")
    assert power >= 0.9
    assert median < fixed


def test_at_low_power_the_fixed_design_is_shorter():
    # The saving comes at high power: a budget that decides only about three
    # times in four stops later, in the median, than a fixed design would.
    power, median, fixed = sequential_against_fixed(0.5, 1.0, 60, 37)
    print(f"standardised effect 0.5: power {power:.3f} within 60 blocks, median {median:g} "
          f"blocks; fixed design of the same power: {fixed} blocks")
    assert 0.6 < power < 0.85
    assert median > fixed


def mesh_runs(d_blocks: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    """Runs of a two-point design (mesh off, on) whose per-block log ratios
    are d_blocks: what a sequential experiment would have stored."""
    off, on = json.dumps({"deploy.mtls": False}), json.dumps({"deploy.mtls": True})
    rows = []
    for b, d in enumerate(d_blocks, start=1):
        base = 2.0 * math.exp(rng.normal(0, 0.05))  # a block effect: cancels out
        rows.append({"repetition": b, "mesh": off, "p50_ms": base, "bottleneck": False})
        rows.append({"repetition": b, "mesh": on, "p50_ms": base * math.exp(d),
                     "bottleneck": False})
    return pd.DataFrame(rows)


def test_the_questions_decision_is_the_simulated_one():
    """answer() on stored runs stops where the vectorised simulation does."""
    rng = np.random.default_rng(36)
    d = rng.normal(math.log(RATIO), math.sqrt(2) * RUN_SD, (20, BUDGET_BLOCKS))
    lo, hi = running_bounds(d, 1 - ALPHA)
    first = first_decision((lo > 0) | (hi < 0))
    q = qs.Question("mesh cost", "mesh", (), "p50_ms")
    levels = {"mesh": [json.dumps({"deploy.mtls": False}), json.dumps({"deploy.mtls": True})]}
    checked = 0
    for i in range(20):
        runs = mesh_runs(d[i], rng)
        if first[i] == 0:
            continue
        at = qs.answer(q, runs[runs["repetition"] <= first[i]], ["mesh"], levels, True)
        assert at.decided and at.blocks == first[i] and at.runs == 2 * first[i]
        assert at.ratios[0].verdict == "differs"
        assert at.ratios[0].low == pytest.approx(math.exp(lo[i, first[i] - 1]))
        before = qs.answer(q, runs[runs["repetition"] < first[i]], ["mesh"], levels, True)
        assert not before.decided
        checked += 1
    assert checked >= 15


# The fewest blocks a confidence sequence needs for a finite interval, by
# confidence; internal/experiment's Go test reads the same file, so that
# `svclab plan` warns of a budget too small by the analysis's own numbers.
BLOCKS_NEEDED = (Path(__file__).resolve().parents[2] / "internal" / "experiment" / "testdata"
                 / "blocks_needed.json")


def test_blocks_needed_pinned() -> None:
    cases = json.loads(BLOCKS_NEEDED.read_text())
    assert len(cases) >= 10
    for c in cases:
        assert qs.blocks_needed(c["confidence"]) == c["blocks"], c
