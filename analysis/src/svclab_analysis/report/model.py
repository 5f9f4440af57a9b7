"""The report's document model: what the report says, before HTML or Markdown.

`document.build` fills it from an analysis; `render` turns it into HTML and
Markdown, so both formats say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Para:
    text: str
    cls: str = ""


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    caption: str = ""
    highlight_first: bool = False


@dataclass
class Figure:
    key: str
    caption: str


@dataclass
class Bullets:
    items: list[str]
    cls: str = ""


@dataclass
class Heading:
    text: str


Block = Para | Table | Figure | Bullets | Heading
@dataclass
class Section:
    key: str
    title: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Document:
    """The whole report: a title, one line under it, the sections and the PNGs
    their figures name."""

    title: str
    subtitle: str
    sections: list[Section]
    figures: dict[str, bytes]
