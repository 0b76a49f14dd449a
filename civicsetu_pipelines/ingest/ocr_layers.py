"""Someone else's OCR: a page whose text is drawn invisibly over an image of the page, and whether
its words keep the structure the document's own numbering promises.

Pure domain code (no Dagster). A scanned gazette often comes with a text layer made by whoever
scanned it (text render mode 3, invisible, over a picture covering the page): its words may be
English and still have lost what a legal text hangs on, the numbers. :func:`foreign_ocr_layer`
finds such a page; :func:`structure_faults` reads what its text breaks of the numbering a person
sees at a glance (a sub-unit numbered "(l)" or "(a)" where "(1)" or "(4)" runs, a unit number
lost between its neighbours); :func:`numbering_gaps` finds, over the whole document, the pages
where a run of unit numbers skips one or opens late (its first numbers lost);
:func:`prefer_reread` chooses between the layer and this project's own reading of the page
image, by the faults each has, then the units each numbers, then their share of English words.
``ingest.pages`` re-reads only the pages that fail.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

INVISIBLE_MODE = 3  # PDF text render mode 3: neither filled nor stroked
MIN_INVISIBLE_SHARE = 0.8  # of the page's characters
MIN_IMAGE_COVER = 0.8  # of the page's area, by one image
# Someone else's OCR is re-read below this share of English words (a fresh reading of the
# issue's authority order: 0.92 against its layer's 0.81), and replaced only when the fresh
# reading beats it by SHARE_MARGIN (the corpus's MahaRERA orders: 0.87 -> 0.91, 0.81 -> 0.83,
# 0.70 -> 0.71: kept as they are); any text layer is replaced far lower
# (ingest.pages.MIN_KNOWN_SHARE).
MIN_LAYER_SHARE = 0.88
SHARE_MARGIN = 0.05  # a reading preferred for its words alone must beat the other by this

# A unit's number opening a line ("4." alone, as a hanging number, or "4. Title.-"), and a
# sub-unit's ("(4) The declaration", "(l) The declaration": OCR's "l" for a "1")
_UNIT_NUMBER = re.compile(r"^\s*(?P<n>\d{1,3})[A-Z]?\s*\.(?:\s*$|\s+\S)", re.M)
_SUB_MARKER = re.compile(r"^\s*\((?P<m>[0-9]{1,2}|[a-zA-Z]{1,2})\)\s", re.M)
_DIGIT_LOOKALIKES = {"l": "1", "I": "1", "i": "1", "O": "0", "o": "0", "S": "5", "s": "5",
                     "B": "8", "Z": "2", "z": "2", "G": "6", "q": "9", "g": "9"}  # fmt: skip


def foreign_ocr_layer(page: Any) -> bool:
    """Whether a PyMuPDF ``page`` carries someone else's OCR: most of its characters drawn
    invisibly, over one image that covers most of the page. Checked in that order of cost:
    a page with no image (most pages of text) is answered from its resources alone."""
    if not page.get_images(full=False):
        return False
    area = abs(page.rect.width * page.rect.height) or 1.0
    covered = any(
        abs((x1 - x0) * (y1 - y0)) >= MIN_IMAGE_COVER * area
        for x0, y0, x1, y1 in (info["bbox"] for info in page.get_image_info())
    )
    if not covered:
        return False
    total = invisible = 0
    for span in page.get_texttrace():
        count = len(span.get("chars", ()))
        total += count
        invisible += count if span.get("type") == INVISIBLE_MODE else 0
    return bool(total) and invisible >= MIN_INVISIBLE_SHARE * total


def structure_faults(text: str) -> list[str]:
    """What ``text`` breaks of its own sub-unit numbering, each fault named with its markers: a
    run of numbered sub-units that skips one or two ("(3) ... (5)": the "(4)" misread, perhaps
    as "(a)") or repeats one past its second ("(3) ... (3)"), or a run that opens at "(2)"
    right after a letter that is a "1" misread ("(l) ... (2)"). Lettered clauses between
    numbers are a run of their own; a smaller number starts a new run (the next unit's, its
    "(1)" printed beside its number)."""
    faults = []
    previous: int | None = None  # the last numbered sub-unit
    before: str | None = None  # the marker just before this one
    for match in _SUB_MARKER.finditer(text):
        marker = match.group("m")
        if marker.isdigit():
            n = int(marker)
            if previous is not None and (n - previous in (2, 3) or n == previous > 2):
                faults.append(f"({previous}) then ({n})")
            elif previous is None and n > 1 and before is not None and _as_digit(before) == n - 1:
                faults.append(f"({before}) then ({n}): a {n - 1} misread")
            previous = n
        before = marker
    return faults


def _as_digit(marker: str) -> int | None:
    looks = "".join(_DIGIT_LOOKALIKES.get(c, "?") for c in marker)
    return int(looks) if looks.isdigit() else None


def unit_numbers(text: str) -> list[int]:
    """The unit numbers opening ``text``'s lines, in order."""
    return [int(m.group("n")) for m in _UNIT_NUMBER.finditer(text)]


def numbering_gaps(pages: Sequence[tuple[int, str]]) -> set[int]:
    """The pages (of ``(page, text)`` in order) where the document's run of unit numbers loses
    some: where it skips one or two ("3." on one page, "5." next, no "4."), from the page of the
    number before the gap to the page of the number after it; and where it opens late (a
    document's units are numbered from 1): the pages before its first number that number their
    sub-units ("(1) ...": a unit's text, its own number lost), with the page of that first number,
    or, when no page has a unit number at all, every page that numbers sub-units (a column of
    hanging numbers the layer never read). A smaller number (a list inside a unit, a new
    schedule) starts a run of its own."""
    seen: list[tuple[int, int]] = [(page, n) for page, text in pages for n in unit_numbers(text)]
    gaps: set[int] = set()
    for (page_a, a), (page_b, b) in zip(seen, seen[1:], strict=False):
        if b - a in (2, 3):
            gaps.update(range(page_a, page_b + 1))
    first_page, first = seen[0] if seen else (None, 0)
    if first != 1:
        before = [
            page
            for page, text in pages
            if (first_page is None or page < first_page) and _SUB_MARKER.search(text)
        ]
        gaps.update(before)
        if first_page is not None and before:
            gaps.add(first_page)
    return gaps


@dataclass(frozen=True)
class Reading:
    """One reading of a page, as :func:`prefer_reread` weighs it."""

    faults: tuple[str, ...]
    numbers: int  # unit and sub-unit numbers opening its lines
    share: float | None  # of English words (None: too few words to judge)

    @classmethod
    def of(cls, text: str, share: float | None) -> Reading:
        numbered = len(unit_numbers(text)) + len(_SUB_MARKER.findall(text))
        return cls(tuple(structure_faults(text)), numbered, share)

    def __str__(self) -> str:
        share = f"{self.share:.2f}" if self.share is not None else "n/a"
        return f"{len(self.faults)} numbering faults, {self.numbers} numbers, {share} English words"


def prefer_reread(layer: Reading, reread: Reading, gap: bool = False) -> bool:
    """Whether this project's reading of the page image serves better than someone else's
    layer: fewer numbering faults; at equal faults, on a page where the document's unit numbers
    skip one (``gap``), more numbers found (the one the layer dropped); else a higher share of
    English words by :data:`SHARE_MARGIN`."""
    if len(reread.faults) != len(layer.faults):
        return len(reread.faults) < len(layer.faults)
    if gap and reread.numbers != layer.numbers:
        return reread.numbers > layer.numbers
    if layer.share is None or reread.share is None:
        return False
    return reread.share >= layer.share + SHARE_MARGIN
