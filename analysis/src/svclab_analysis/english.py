"""Counts of things as English says them: "1 run", "2 runs", "0 runs".

Every noun svclab-analysis counts in its output takes -s, as in svclab's
own output (internal/english).
"""

from __future__ import annotations


def noun(n: object, word: str) -> str:
    """word for one of it, its plural for any other count."""
    return word if n == 1 else word + "s"


def count(n: object, word: str) -> str:
    """n and word, the word as n needs it: count(1, "run") is "1 run"."""
    return f"{n} {noun(n, word)}"
