"""Glyphs drawn twice, read once.

Some state government orders draw each line of text in two clipped strips, the glyph at the seam
in both: the rows read "fiv ve", "rule e 18", "GOVER RNMENT" (the substituted words of an
amendment are exactly the ones that come out doubled). "Print to PDF" of overlapping boxes draws
every glyph twice at the same place. :func:`drop_doubled_glyphs` drops such copies from the lines
of a page's ``rawdict`` text before :mod:`~civicsetu_pipelines.ingest.pages` builds rows of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def bbox_of(items: Sequence[dict[str, Any]]) -> tuple[float, float, float, float] | None:
    """The box around the ``bbox`` of PyMuPDF spans or characters; None for none."""
    boxes = [item["bbox"] for item in items]
    if not boxes:
        return None
    return (min(b[0] for b in boxes), min(b[1] for b in boxes),
            max(b[2] for b in boxes), max(b[3] for b in boxes))  # fmt: skip


# A glyph drawn again where a glyph of the same text already is -- its origin within this share
# of the glyph's width across and of its height down -- is a copy, not text: some state orders
# draw each line in two clipped strips with the glyph at the seam in both ("fiv ve"), "print to
# PDF" of overlapping boxes draws every glyph twice. Repeated letters ("committee", "1100") are
# a whole glyph width apart. (pdfplumber's ``dedupe_chars``, tolerance 1 pt, is the same idea.)
DOUBLED_SHARE = 0.3
_CELL = 3.0  # grid of kept glyph origins (points): a copy is looked for in the cells its
# tolerance box covers

_Kept = dict[tuple[str, int, int], list[tuple[float, float, float, float, int, int]]]


def drop_doubled_glyphs(lines: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """PyMuPDF ``rawdict`` lines (spans with ``chars`` and ``text``) without the glyphs that copy
    a glyph kept before them (same text, same place: :data:`DOUBLED_SHARE`), and how many were
    dropped. White space is never dropped. Spans' text and boxes are rebuilt, and two lines a
    doubled seam glyph split are one line again: the line whose first glyphs copied the other
    line's last ones goes on after it, without a space ("fiv" + "ve" is "five")."""
    kept: _Kept = {}
    dropped: dict[int, dict[int, tuple[int, int]]] = {}  # line -> {place: (twin line, place)}
    ends: dict[int, tuple[int, int] | None] = {}  # per line, its first and last glyph kept
    for index in _suspects(lines):
        line, at, first, last = lines[index], -1, -1, -1
        for span in line["spans"]:
            keep = []
            for ch in span["chars"]:
                at += 1
                c = ch["c"]
                if c.isspace():
                    keep.append(ch)
                    continue
                x, y = ch["origin"]
                box = ch["bbox"]
                w, h = box[2] - box[0], box[3] - box[1]
                twin = _twin(kept, c, x, y, w, h)
                if twin is None:
                    cell = (c, int(x // _CELL), int(y // _CELL))
                    kept.setdefault(cell, []).append((x, y, w, h, index, at))
                    keep.append(ch)
                    first, last = first if first >= 0 else at, at
                else:
                    dropped.setdefault(index, {})[at] = twin
            if len(keep) < len(span["chars"]):
                span["chars"] = keep
                span["text"] = "".join(ch["c"] for ch in keep)
                span["bbox"] = bbox_of(keep) or span["bbox"]
        ends[index] = (first, last) if first >= 0 else None
    if not dropped:
        return lines, 0
    after: dict[int, int] = {}  # line -> the line that goes on after it
    for index, places in dropped.items():
        line = lines[index]
        line["spans"] = [s for s in line["spans"] if s["chars"]]
        line["bbox"] = bbox_of(line["spans"]) or line["bbox"]
        own = ends[index]
        if own is None:
            continue
        lead = [at for at in places if at < own[0]]
        trail = [at for at in places if at > own[1]]
        if lead:  # its first glyphs copy another line's last ones: it goes on after that line
            other, other_at = places[max(lead)]
            if other != index and (ends[other] or (0, -1))[1] == other_at:
                _follow(after, other, index)
        if trail:  # its last glyphs copy another line's first ones: that line goes on after it
            other, other_at = places[min(trail)]
            if other != index and (ends[other] or (-1, 0))[0] == other_at:
                _follow(after, index, other)
    return _join_lines(lines, after), sum(len(places) for places in dropped.values())


def _suspects(lines: list[dict[str, Any]]) -> list[int]:
    """The lines that may hold a glyph copying another or the glyph it copies, in order, found
    at a fraction of the cost of looking for copies (on most pages, none): a line whose glyphs
    do not each go on more than DOUBLED_SHARE of the previous one's width to the right, and two
    lines with spans that touch across and overlap by 30% of their height."""
    suspects = set()
    spans = []
    for index, line in enumerate(lines):
        if tuple(line["dir"]) != (1.0, 0.0):
            suspects.add(index)
        limit = -1e9
        for span in line["spans"]:
            if not span["text"].strip():
                continue
            if index not in suspects:
                for ch in span["chars"]:
                    if ch["c"] == " ":
                        continue
                    x = ch["origin"][0]
                    if x <= limit:
                        suspects.add(index)
                        break
                    limit = x + DOUBLED_SHARE * (ch["bbox"][2] - ch["bbox"][0])
            spans.append((span["bbox"], index))
    spans.sort(key=lambda item: item[0][1])
    for k, (box, index) in enumerate(spans):
        for other, other_index in spans[k + 1 :]:
            if other[1] >= box[3]:
                break
            high = min(box[3], other[3]) - other[1]  # other[1] >= box[1]: sorted
            if (other_index != index and other[0] <= box[2] and box[0] <= other[2]
                    and high >= 0.3 * min(box[3] - box[1], other[3] - other[1])):  # fmt: skip
                suspects.update((index, other_index))
    return sorted(suspects)


def _twin(kept: _Kept, c: str, x: float, y: float, w: float, h: float) -> tuple[int, int] | None:
    """The line and place of a kept glyph ``c`` that the glyph at ``x, y`` copies, if any."""
    across, down = DOUBLED_SHARE * w, DOUBLED_SHARE * h
    for gx in range(int((x - across) // _CELL), int((x + across) // _CELL) + 1):
        for gy in range(int((y - down) // _CELL), int((y + down) // _CELL) + 1):
            for kx, ky, kw, kh, line, at in kept.get((c, gx, gy), ()):
                if (abs(kx - x) <= DOUBLED_SHARE * min(w, kw)
                        and abs(ky - y) <= DOUBLED_SHARE * min(h, kh)):  # fmt: skip
                    return line, at
    return None


def _follow(after: dict[int, int], line: int, nxt: int) -> None:
    """Record that ``nxt`` goes on after ``line``, unless either is taken or it makes a loop."""
    if line in after or nxt in after.values():
        return
    step: int | None = nxt
    while step is not None:
        if step == line:
            return
        step = after.get(step)
    after[line] = nxt


def _join_lines(lines: list[dict[str, Any]], after: dict[int, int]) -> list[dict[str, Any]]:
    """``lines`` with each line followed (``after``) by another joined with it, in its place."""
    followed = set(after.values())
    out = []
    for index, line in enumerate(lines):
        if index in followed:
            continue  # joined to the line it goes on after
        spans, nxt = list(line["spans"]), after.get(index)
        while nxt is not None:
            spans += lines[nxt]["spans"]
            nxt = after.get(nxt)
        out.append({**line, "spans": spans, "bbox": bbox_of(spans) or line["bbox"]}
                   if index in after else line)  # fmt: skip
    return out
