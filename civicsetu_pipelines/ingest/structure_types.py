"""The shapes a document's structure is read into: its stream of rows, its units, and what the
decoder made of them.

Pure domain code, data only. :mod:`~civicsetu_pipelines.ingest.legal_structure` builds these
and :mod:`~civicsetu_pipelines.ingest.structure_checks` checks them: both import them from here,
so neither imports the other for its types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from civicsetu_pipelines.ingest.headings import Appendix, Heading


@dataclass
class StreamRow:
    """A row of body text placed in the document stream (all pages' text, joined)."""

    start: int
    end: int
    page: int
    y0: float
    y1: float
    bold: bool
    text: str
    x0: float = 0.0


@dataclass
class Stream:
    text: str
    rows: list[StreamRow]
    page_offsets: list[tuple[int, int]]  # (page number, global offset of the page's text)
    margin_notes: dict[int, list[dict[str, Any]]]

    def locate(self, offset: int) -> tuple[int, int]:
        """Global offset to (page number, offset into that page's text)."""
        page, base = self.page_offsets[0]
        for number, start in self.page_offsets:
            if start > offset:
                break
            page, base = number, start
        return page, offset - base


@dataclass
class Unit:
    """A top-level unit: a section, rule, question, form, preamble..."""

    unit: str
    number: str | None
    label: str
    title: str
    start: int  # global offset where the unit's text starts
    end: int
    body_start: int  # where the text after the heading (number and title) starts
    chapter: str | None = None
    flags: list[str] = field(default_factory=list)


@dataclass
class Decoded:
    """The units of a document and the candidates they were decoded from (for the checks)."""

    units: list[Unit]
    headings: list[Heading]  # every numbered-heading candidate, in document order
    chosen: list[Heading]  # the decoded sequence
    appendices: list[Appendix]  # every appendix-heading candidate
    body_end: int  # where the numbered body ends (the first appendix after it starts)
