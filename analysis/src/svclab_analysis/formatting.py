"""Numbers and Markdown tables as the report, the replications and the CLI print them.

Every number svclab-analysis prints goes through `num`, and every Markdown
table through `md_table`, so a reader sees one style everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def num(v: Any, significant: int | None = None) -> str:
    """A number with as many digits as a reader can use; "—" when there is none.

    With `significant`, plain `g` notation with that many significant digits
    (whole numbers from 10,000 up) and an ASCII minus: the CLI's tables, which
    scripts read as well as people.
    """
    if v is None:
        return "—"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(x):
        return "—"
    # Rounded to 12 significant digits first, so that a value that is a tie in
    # exact arithmetic (36.75) prints the same whether this CPU's BLAS kernels
    # computed it as 36.7499999999 or 36.7500000001.
    x = float(f"{x:.12g}")
    if significant is not None:
        return f"{x:.0f}" if abs(x) >= 1e4 else f"{x:.{significant}g}"
    # The band is chosen on the value as printed, so 0.9999999 and 1.0000001
    # both read "1.00".
    a = abs(x)
    band = float(f"{a:.3g}")
    if band == 0:
        return "0"
    if band >= 1000:
        s = f"{a:,.0f}"
    elif band >= 100:
        s = f"{a:.0f}"
    elif band >= 10:
        s = f"{a:.1f}"
    elif band >= 1:
        s = f"{a:.2f}"
    elif band >= 0.01:
        s = f"{a:.3f}"
    else:
        s = f"{a:.2g}"
    # A typographic minus: "−0.3–−0.1" would be unreadable with hyphens.
    return "−" + s if x < 0 else s


def integer(v: Any) -> str:
    """A count such as a number of runs: "—" when it is missing."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return "—"
    return str(int(x)) if math.isfinite(x) else "—"


def seconds(v: Any) -> str:
    try:
        return f"{float(v):g} s"
    except (TypeError, ValueError):
        return "—"


def duration(s: float) -> str:
    """`8 min 20 s`, or `45 s` under a minute."""
    if not math.isfinite(s):
        return "—"
    r = round(s)
    return f"{r // 60} min {r % 60:02d} s" if r >= 60 else f"{r} s"


def with_unit(v: Any, unit: str) -> str:
    s = num(v)
    if s == "—" or not unit:
        return s
    return f"{s}%" if unit == "%" else f"{s} {unit}"


def percent(confidence: float) -> str:
    """95 for 0.95, 97.5 for 0.975: a confidence level, in percent."""
    return f"{100 * confidence:.4g}"


def ci(lo: Any, hi: Any, unit: str = "") -> str:
    """An interval, `1.10–1.40 ms`, or `−0.3 to 0.2` when a bound is negative."""
    if num(lo) == "—" or num(hi) == "—":
        return "—"
    u = "" if not unit else (unit if unit in ("%", "×") else f" {unit}")
    sep = " to " if float(lo) < 0 or float(hi) < 0 else "–"
    return f"{num(lo)}{sep}{num(hi)}{u}"


def est(value: float, lo: float, hi: float, unit: str = "") -> str:
    """`1.23 (1.10–1.40)`, or `2.1× (1.9–2.3)`: an estimate and its interval.

    The unit, if any, follows the estimate; a missing interval is left out.
    """
    if not math.isfinite(value):
        return "—"
    text = num(value) + unit
    interval = ci(lo, hi)
    return text if interval == "—" else f"{text} ({interval})"


def pval(p: Any) -> str:
    try:
        x = float(p)
    except (TypeError, ValueError):
        return "—"
    if not math.isfinite(x):
        return "—"
    return "< 0.0001" if x < 1e-4 else f"{x:.4f}" if x < 0.001 else f"{x:.3f}"


def p_text(p: Any) -> str:
    """`p = 0.012` or `p < 0.0001`."""
    s = pval(p)
    return f"p {s}" if s.startswith("<") else f"p = {s}"


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub Markdown table; a `|` inside a cell is escaped."""
    def esc(c: str) -> str:
        return c.replace("|", "\\|")

    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)
