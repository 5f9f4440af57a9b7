"""The document model as one self-contained HTML page and as Markdown."""

from __future__ import annotations

import base64
import html
import re

from .. import __version__
from ..formatting import md_table
from .model import Block, Bullets, Document, Figure, Heading, Para


def _inline(text: str) -> str:
    """Escape, then turn **bold** and `code` into HTML."""
    t = html.escape(text)
    t = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", t)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", t)


_NUMERIC = re.compile(
    r"^(?:[<−-]?\s?[\d,.]+(?:%|×)?(?:(?:–| to )−?[\d,.]+)?(?:\s?[×%]|\s[^\s\d]\S*)?"
    r"(?:\s\(.*\))?|—|1 \(best\))$"
)

CSS = """
:root{--ink:#1f2933;--muted:#616e7c;--line:#e4e7eb;--bg:#fff;--accent:#0072B2;
--soft:#f5f7fa;--warn:#b44d12;--warnbg:#fff8f1}
*{box-sizing:border-box}
body{margin:0;background:var(--soft);color:var(--ink);
font:15px/1.55 -apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,"Helvetica Neue",
"DejaVu Sans",Arial,sans-serif}
main{max-width:1000px;margin:0 auto;padding:32px 28px 64px;background:var(--bg);
min-height:100vh;box-shadow:0 0 0 1px var(--line)}
header h1{font-size:26px;margin:0 0 4px;letter-spacing:-.01em}
header p{margin:0;color:var(--muted);font-size:13px}
nav{margin:18px 0 8px;display:flex;flex-wrap:wrap;gap:6px}
nav a{font-size:13px;color:var(--accent);text-decoration:none;padding:3px 10px;
border:1px solid var(--line);border-radius:999px}
nav a:hover{background:var(--soft)}
h2{font-size:19px;margin:38px 0 12px;padding-top:14px;border-top:1px solid var(--line)}
h3{font-size:15px;margin:24px 0 8px}
p.answer{font-size:17px;line-height:1.6;background:#eef6fc;border-left:4px solid var(--accent);
padding:14px 18px;margin:12px 0 18px;border-radius:0 6px 6px 0}
table{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0 4px;
font-variant-numeric:tabular-nums}
th{text-align:left;font-weight:600;color:var(--muted);border-bottom:2px solid var(--line);
padding:6px 8px;vertical-align:bottom}
td{padding:5px 8px;border-bottom:1px solid var(--line)}
td.n,th.n{text-align:right;white-space:nowrap}
td{white-space:nowrap}
tr.best td{background:#eef6fc;font-weight:600}
.tablewrap{overflow-x:auto}
.caption{color:var(--muted);font-size:12.5px;margin:4px 0 14px}
figure{margin:14px 0 22px}
figure img{max-width:100%;height:auto;display:block}
figcaption{color:var(--muted);font-size:12.5px;margin-top:4px}
ul{padding-left:20px}
li{margin:4px 0}
ul.warn{list-style:none;padding:0}
ul.warn li{background:var(--warnbg);border-left:3px solid var(--warn);padding:7px 12px;
border-radius:0 4px 4px 0;margin:6px 0;font-size:14px}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em;
background:var(--soft);padding:1px 4px;border-radius:3px}
footer{margin-top:40px;color:var(--muted);font-size:12px}
"""


def render_html(doc: Document) -> str:
    title = html.escape(doc.title)
    out = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{title} — svclab report</title>",
           f"<style>{CSS}</style></head><body><main>",
           f"<header><h1>{title}</h1>",
           f"<p>{html.escape(doc.subtitle)}</p></header>",
           "<nav>" + "".join(f'<a href="#{s.key}">{html.escape(s.title)}</a>'
                             for s in doc.sections)
           + "</nav>"]
    for s in doc.sections:
        out.append(f'<section id="{s.key}"><h2>{html.escape(s.title)}</h2>')
        for b in s.blocks:
            out.append(_html_block(b, doc.figures))
        out.append("</section>")
    out.append(f"<footer>svclab-analysis {__version__}</footer></main></body></html>")
    return "\n".join(out)


def _html_block(b: Block, figs: dict[str, bytes]) -> str:
    if isinstance(b, Heading):
        return f"<h3>{_inline(b.text)}</h3>"
    if isinstance(b, Para):
        cls = f' class="{b.cls}"' if b.cls else ""
        return f"<p{cls}>{_inline(b.text)}</p>"
    if isinstance(b, Bullets):
        cls = f' class="{b.cls}"' if b.cls else ""
        return f"<ul{cls}>" + "".join(f"<li>{_inline(i)}</li>" for i in b.items) + "</ul>"
    if isinstance(b, Figure):
        data = base64.b64encode(figs[b.key]).decode("ascii")
        return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(b.key)}">'
                f"<figcaption>{_inline(b.caption)}</figcaption></figure>")
    numeric = [all(_NUMERIC.match(r[i].strip()) for r in b.rows) and b.rows
               for i in range(len(b.headers))]
    head = "".join(f'<th class="n">{_inline(h)}</th>' if numeric[i] else f"<th>{_inline(h)}</th>"
                   for i, h in enumerate(b.headers))
    body = []
    for j, r in enumerate(b.rows):
        cls = ' class="best"' if b.highlight_first and j == 0 else ""
        body.append(f"<tr{cls}>" + "".join(
            f'<td class="n">{_inline(c)}</td>' if numeric[i] else f"<td>{_inline(c)}</td>"
            for i, c in enumerate(r)) + "</tr>")
    cap = f'<p class="caption">{_inline(b.caption)}</p>' if b.caption else ""
    return (f'<div class="tablewrap"><table><thead><tr>{head}</tr></thead><tbody>'
            + "".join(body) + f"</tbody></table></div>{cap}")


def render_md(doc: Document, figdir: str) -> str:
    """Markdown beside the figures' PNGs, which `figdir` (relative) holds."""
    out = [f"# {doc.title}", "", doc.subtitle, ""]
    for s in doc.sections:
        out += [f"## {s.title}", ""]
        for b in s.blocks:
            if isinstance(b, Heading):
                out += [f"### {b.text}", ""]
            elif isinstance(b, Para):
                out += [b.text, ""]
            elif isinstance(b, Bullets):
                out += [f"- {i}" for i in b.items] + [""]
            elif isinstance(b, Figure):
                out += [f"![{b.key}]({figdir}/{b.key}.png)", "", f"*{b.caption}*", ""]
            else:
                out += [md_table(b.headers, b.rows), ""]
                if b.caption:
                    out += [f"*{b.caption}*", ""]
    return "\n".join(out)
