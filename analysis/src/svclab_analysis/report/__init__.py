"""The report: compute everything (analysis), draw it (figures), describe it
(document, into the model of model.py), then render that one document as
self-contained HTML and as Markdown (render)."""

from __future__ import annotations

from pathlib import Path

from ..errors import AnalysisError
from ..results import load_experiment
from .analysis import analyse
from .document import build
from .figures import figures
from .render import render_html, render_md

__all__ = ["build_report"]


def build_report(
    results: str | Path,
    out: str | Path | None = None,
    metric: str | None = None,
    operation: str | None = None,
    log: bool = False,
    confidence: float = 0.95,
) -> Path:
    """Analyse a results directory and write report.html, report.md and
    figures/*.png into `out` (default: the results directory). Returns the
    path of report.html."""
    exp = load_experiment(results, metric=metric, operation=operation)
    a = analyse(exp, log=log, confidence=confidence)
    a.figures = figures(a)
    doc = build(a)
    outdir = Path(out) if out is not None else exp.path
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        figdir = outdir / "figures"
        figdir.mkdir(exist_ok=True)
        for key, png in a.figures.items():
            (figdir / f"{key}.png").write_bytes(png)
        (outdir / "report.md").write_text(render_md(doc, "figures"), encoding="utf-8")
        path = outdir / "report.html"
        path.write_text(render_html(doc), encoding="utf-8")
    except OSError as exc:
        raise AnalysisError(f"{outdir}: cannot write the report ({exc.strerror})") from None
    return path.resolve()
