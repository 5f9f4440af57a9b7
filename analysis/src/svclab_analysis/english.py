"""Counts of things as English says them: "1 run", "2 runs", "0 runs".

Every noun svclab-analysis counts in its output is regular, as in svclab's
own output (internal/english): -es after s, x, ch or sh, -s after anything
else.
"""

from __future__ import annotations


def noun(n: object, word: str) -> str:
    """word for one of it, its plural for any other count."""
    if n == 1:
        return word
    return word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")


def count(n: object, word: str) -> str:
    """n and word, the word as n needs it: count(1, "run") is "1 run"."""
    return f"{n} {noun(n, word)}"
