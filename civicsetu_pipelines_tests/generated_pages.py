"""How a generated document's words become PDF pages (issue 46): the house styles (page sizes,
margins, fonts, spacing, running headers and footers), the wrapping and page breaks of
:func:`layout`, and :func:`write_pages`, which writes each page's content stream directly with the
fonts embedded once. The words themselves are :mod:`civicsetu_pipelines_tests.generated_state`'s.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pymupdf

Block = tuple[str, Any, Any]


@dataclass
class Doc:
    """A generated document's words as blocks (heading, paragraph, numbered paragraph,
    signature ...), before layout."""

    blocks: list[Block] = field(default_factory=list)
    paragraphs: int = 0
    running: str = ""  # the running header of pages 2 onwards

    def add(self, kind: str, a: Any, b: Any = False) -> None:
        self.blocks.append((kind, a, b))

    def num(self, text: str) -> None:
        self.paragraphs += 1
        self.blocks.append(("num", str(self.paragraphs), text))


# ------------------------------------------------------------------------------------ layout

_FONTS = {"helv": ("helv", "hebo"), "tiro": ("tiro", "tibo"), "cour": ("cour", "cobo")}


@cache
def _font(name: str) -> pymupdf.Font:
    return pymupdf.Font(name)


@cache
def _width_of(name: str, word: str) -> float:
    return _font(name).text_length(word, fontsize=1.0)


@dataclass(frozen=True)
class Style:
    """One house style: page, margins, font, spacing and the running matter."""

    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float
    family: str
    size: float
    leading: float
    gap: float  # between paragraphs
    indent: float  # first-line indent of a paragraph
    hanging: bool  # a paragraph's number in the margin, its text in a column
    footer: str  # "page_of", "dashes", "plain", "pipe", ""
    header_rule: bool

    @staticmethod
    def draw(rng: random.Random) -> Style:
        width, height = rng.choice(((595.0, 842.0), (595.0, 842.0), (612.0, 792.0),
                                    (612.0, 1008.0)))  # fmt: skip
        family = rng.choice(("helv", "tiro", "tiro", "cour"))
        size = rng.choice((10.0, 10.5, 11.0, 11.5, 12.0, 12.5)) - (1.0 if family == "cour" else 0)
        return Style(width, height, left=rng.choice((54.0, 64.0, 72.0, 90.0)),
                     right=rng.choice((54.0, 60.0, 72.0)), top=rng.choice((56.0, 72.0, 90.0)),
                     bottom=rng.choice((56.0, 72.0, 86.0)), family=family, size=size,
                     leading=rng.choice((1.2, 1.3, 1.45, 1.6, 2.0)),
                     gap=rng.choice((0.0, 4.0, 8.0, 12.0)), indent=rng.choice((0.0, 0.0, 36.0)),
                     hanging=rng.random() < 0.35,
                     footer=rng.choice(("page_of", "dashes", "plain", "pipe", "")),
                     header_rule=rng.random() < 0.3)  # fmt: skip


def _wrap(
    text: str, width: float, font: str, size: float, first_width: float | None = None
) -> list[str]:
    lines: list[str] = []
    space = _width_of(font, " ") * size
    current, used = "", 0.0
    limit = first_width if first_width is not None else width
    for word in text.split(" "):
        if not word:
            continue
        w = _width_of(font, word) * size
        if current and used + space + w > limit:
            lines.append(current)
            current, used, limit = word, w, width
        else:
            current, used = (f"{current} {word}", used + space + w) if current else (word, w)
    if current:
        lines.append(current)
    return lines


Placed = tuple[str, float, float, float, bool]  # text, x, baseline y, size, bold


def layout(doc: Doc, style: Style) -> list[list[Placed]]:
    """Flow the blocks onto pages; paragraphs break across pages wherever the page ends."""
    s = style
    body = s.width - s.left - s.right
    regular, bold = _FONTS[s.family]
    step = s.size * s.leading
    pages: list[list[Placed]] = [[]]
    y = s.top + s.size

    def put(text: str, x: float, is_bold: bool = False, size: float | None = None) -> None:
        nonlocal y
        if y > s.height - s.bottom:
            pages.append([])
            y = s.top + s.size + (14 if doc.running else 0)
        pages[-1].append((text, x, y, size or s.size, is_bold))

    def advance(points: float) -> None:
        nonlocal y
        y += points

    for kind, a, b in doc.blocks:
        if kind == "gap":
            advance(float(a))
        elif kind in ("center", "left", "right"):
            font = bold if b else regular
            for line in _wrap(str(a).strip(), body, font, s.size):
                w = sum(_width_of(font, ch) for ch in line) * s.size
                x = {"left": s.left, "center": s.left + max(0.0, (body - w) / 2),
                     "right": max(s.left, s.width - s.right - w)}[kind]  # fmt: skip
                put(line, x, bool(b))
                advance(step)
        elif kind == "party":
            name, role = str(a), str(b)
            w = sum(_width_of(regular, ch) for ch in f"... {role}") * s.size
            put(name, s.left, True)
            if role:
                put(f"... {role}" if len(name) % 2 else f"\u2026{role}", s.width - s.right - w)
            advance(step)
        elif kind == "para":
            lines = _wrap(str(a), body, bold if b else regular, s.size, body - s.indent)
            for n, line in enumerate(lines):
                put(line, s.left + (s.indent if n == 0 else 0.0), bool(b))
                advance(step)
            advance(s.gap)
        elif kind == "num":
            number, text = f"{a}.", str(b)
            if s.hanging:
                column = s.left + 30.0
                lines = _wrap(text, body - 30.0, regular, s.size)
                for n, line in enumerate(lines):
                    if n == 0:
                        put(number, s.left)
                    put(line, column)
                    advance(step)
            else:
                first = s.indent
                lines = _wrap(f"{number} {text}", body, regular, s.size, body - first)
                for n, line in enumerate(lines):
                    put(line, s.left + (first if n == 0 else 0.0))
                    advance(step)
            advance(s.gap)
        elif kind == "item":
            label, text = str(a), str(b)
            indent = 36.0
            lines = _wrap(f"{label} {text}", body - indent, regular, s.size)
            for line in lines:
                put(line, s.left + indent)
                advance(step)
            advance(s.gap / 2)
    if not pages[-1]:
        pages.pop()
    total = len(pages)
    for number, page in enumerate(pages, 1):
        small = max(7.5, s.size - 2)
        if doc.running and number > 1:
            page.append((doc.running, s.left, s.top, small, False))
        footer = {"page_of": f"Page {number} of {total}", "dashes": f"- {number} -", "": "",
                  "plain": str(number), "pipe": f"{number} | P a g e"}[s.footer]  # fmt: skip
        if footer:
            w = sum(_width_of(regular, ch) for ch in footer) * small
            x = s.width - s.right - w if s.footer == "pipe" else (s.width - w) / 2
            page.append((footer, x, s.height - s.bottom / 2, small, False))
    return pages


class _Glyphs(dict[str, str]):
    """Character -> its glyph id in one font as 4 hex digits (Identity-H), filled on demand."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.font = _font(name)

    def __missing__(self, ch: str) -> str:
        gid = self[ch] = f"{self.font.has_glyph(ord(ch)) or self.font.has_glyph(63):04x}"
        return gid


@cache
def _glyphs(name: str) -> _Glyphs:
    return _Glyphs(name)


def _hex(name: str, text: str) -> str:
    return "".join(map(_glyphs(name).__getitem__, text))


def write_pages(pages: list[list[Placed]], style: Style, path: Path) -> None:
    """Write the placed lines as a PDF: the fonts embedded once (Type0, Identity-H, with their
    ToUnicode maps, as PyMuPDF inserts them) and each page's content stream written directly
    (text objects as a word processor writes them; fifty times faster than a TextWriter)."""
    names = _FONTS[style.family]
    pdf = pymupdf.open()
    try:
        resources = ""
        for placed in pages:
            page = pdf.new_page(width=style.width, height=style.height)
            if not resources:  # the fonts embedded once, every page naming the same resources
                for n, name in enumerate(names):
                    page.insert_font(fontname=f"F{n}", fontbuffer=_font(name).buffer)
                resources = pdf.xref_get_key(page.xref, "Resources")[1]
            else:
                pdf.xref_set_key(page.xref, "Resources", resources)
            ops = ["BT"]
            for text, x, y, size, is_bold in placed:
                font = names[1] if is_bold else names[0]
                ops.append(f"/F{int(is_bold)} {size:g} Tf 1 0 0 1 {x:.2f} {style.height - y:.2f} "
                           f"Tm <{_hex(font, text)}> Tj")  # fmt: skip
            ops.append("ET")
            if style.header_rule:
                top = style.height - style.top + 8
                ops.append(f"0.5 w {style.left:.2f} {top:.2f} m "
                           f"{style.width - style.right:.2f} {top:.2f} l S")  # fmt: skip
            xref = pdf.get_new_xref()
            pdf.update_object(xref, "<<>>")
            pdf.update_stream(xref, "\n".join(ops).encode("ascii"), compress=False)
            page.set_contents(xref)
        pdf.save(path, garbage=1, deflate=True, no_new_id=True)
    finally:
        pdf.close()


# ------------------------------------------------------------------------------------ the state
