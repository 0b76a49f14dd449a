"""Hanging numbers: a unit's number alone in a narrow column of its own, beside the body.

Pure domain code (:mod:`~civicsetu_pipelines.ingest.pages` uses it on a page's lines). Some
rules print each rule's title in the left margin, wrapped over a few lines, and its number
("3.") in a narrow column between that title and the body, level with the body's first line:

    Information and        3. (1) The promoter shall furnish the following ...
    documents to be            (a) ...
    furnished by the ...

The number is the rule's number and stays with the body (it is no margin note, even as an
OCR'd text layer prints it: "2,", "I0.", "3l."); the title starts level with it, so a title
starts there even where the last rule's title, wrapped below, ran right up to it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, TypeVar

# A number alone on its line ("3.", and as an OCR'd text layer prints one: "2,", "I0.", "3l."):
# one real digit at least, so a lone "I." or "l." stays what it reads as.
_NUMBER_ALONE = re.compile(r"^(?=\D*\d)[\dlIOo]{1,3}[.,)]?$")
NARROW_SHARE = 0.2  # of the page width: wider is no margin column
GUTTER = 4.0  # points between a column and the body column


class Box(Protocol):
    """A line of text on a page, where it is."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float


LineT = TypeVar("LineT", bound=Box)


def is_number_alone(text: str) -> bool:
    """Whether ``text`` is a number and nothing else ("3.", "2,", "I0.")."""
    return bool(_NUMBER_ALONE.match(text.strip()))


def hanging_numbers(
    body_lines: Sequence[Box], column: tuple[float, float], width: float
) -> list[tuple[float, float]]:
    """The numbers alone in a narrow column of their own outside the body ``column`` (its left
    and right edges), each as the band (y0, y1) of the body line it is level with: the one it
    overlaps most (its own band where it overlaps none), its unit's first line."""
    left, right = column
    inside = [b for b in body_lines if b.x0 < right and b.x1 > left]
    bands = []
    for ln in body_lines:
        narrow = ln.x1 - ln.x0 < NARROW_SHARE * width
        outside = ln.x0 >= right + GUTTER or ln.x1 <= left - GUTTER
        if not (narrow and outside and is_number_alone(ln.text)):
            continue
        level: Box | None = max(inside, default=None, key=lambda b: _overlap(b, ln))
        if level is None or _overlap(level, ln) <= 0:
            level = ln
        bands.append((level.y0, level.y1))
    return bands


def title_starts(
    margin_lines: Sequence[LineT], numbers: Sequence[tuple[float, float]]
) -> list[LineT]:
    """The margin lines a title starts on beside hanging ``numbers`` (the bands of the body
    lines they are level with): for each, the topmost margin line level with it (its middle
    within the band)."""
    starts = []
    for y0, y1 in numbers:
        level = [ln for ln in margin_lines if y0 <= (ln.y0 + ln.y1) / 2 <= y1]
        if level:
            starts.append(min(level, key=lambda ln: ln.y0))
    return starts


def _overlap(a: Box, b: Box) -> float:
    return min(a.y1, b.y1) - max(a.y0, b.y0)
