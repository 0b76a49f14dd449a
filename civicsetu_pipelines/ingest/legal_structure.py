"""Legal structure from parsed pages: top-level units, their sub-structure, and chunks.

Pure domain code (no Dagster). Every number, label and title comes from the parsed text:

* Candidates: every row that could open a unit, with its evidence
  (:mod:`~civicsetu_pipelines.ingest.headings`: ``N.``, ``N)``, ``N-(1)``, ``Rule N``, a number
  alone with its title below, margin-note titles, FAQ questions, chapters, appendices).
* Units: the best sequence through the candidates (:mod:`~civicsetu_pipelines.ingest.sequence`),
  so a year such as ``2016.``, a cross-reference, a list inside a unit or a form's own items are
  never taken for a section; forms, schedules and annexures begin where the numbered body ends.
* Checks: :mod:`~civicsetu_pipelines.ingest.structure_checks`; a document whose structure fails
  them is kept page by page.

Long units are split along their own numbering (``(1)``, ``(a)``, ``(i)``) with the markers kept
in the text. Numbers an OCR'd text layer misprinted (``2,``, ``I0.``, ``(l)`` for ``(1)``) are
read as numbers only where the sequence expects one, and flagged so
(:mod:`~civicsetu_pipelines.ingest.ocr_numbers`).
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from civicsetu_pipelines.base import canonicalize
from civicsetu_pipelines.ingest.headings import (
    CREDIBLE_SCORE,
    MARKER,
    UNIT_WORD,
    Appendix,
    Heading,
    appendix_at,
    body_edges,
    contents_rows,
    is_chapter,
    is_toc_row,
    line_lengths,
    next_words,
    numbered_heading,
    question_heading,
)
from civicsetu_pipelines.ingest.kinds import load_kinds
from civicsetu_pipelines.ingest.ocr_numbers import (
    OCR_MARKER,
    marker_readings,
    next_number_follows,
    ocr_read_heading,
    read_flag,
)
from civicsetu_pipelines.ingest.sequence import decode
from civicsetu_pipelines.ingest.structure_checks import StructureCheck, check_structure, failed
from civicsetu_pipelines.ingest.structure_types import Decoded, Stream, StreamRow, Unit
from civicsetu_pipelines.ingest.unit_parts import paragraph_word, part_word, split_paragraph

NAMESPACE = uuid.UUID("5b0d6a43-7f4e-4bb1-9a4e-2f1c0c1e9a11")
MAX_CHARS = 2400
MIN_CHARS = 160
BODYLESS_PENALTY = 1.0  # a heading with no body before the next heading (a list item)


_ROMAN = re.compile(r"^[ivxlc]+$")


def build_stream(pages: Sequence[dict[str, Any]]) -> Stream:
    parts: list[str] = []
    rows: list[StreamRow] = []
    offsets: list[tuple[int, int]] = []
    notes: dict[int, list[dict[str, Any]]] = {}
    cursor = 0
    for page in pages:
        offsets.append((int(page["page"]), cursor))
        notes[int(page["page"])] = list(page.get("margin_notes") or [])
        text = page["text"]
        for row in page.get("rows") or []:
            rows.append(
                StreamRow(
                    start=cursor + int(row["start"]),
                    end=cursor + int(row["end"]),
                    page=int(page["page"]),
                    y0=float(row["y0"]),
                    y1=float(row["y1"]),
                    bold=bool(row.get("bold")),
                    text=text[int(row["start"]) : int(row["end"])],
                    x0=float(row.get("x0") or 0.0),
                )
            )
        parts.append(text)
        cursor += len(text) + 1
    return Stream("\n".join(parts), rows, offsets, notes)


@dataclass
class Chunk:
    chunk_id: str
    document_key: str
    jurisdiction: str
    doc_type: str
    unit: str
    number: str | None
    legal_path: str
    label: str
    section_label: str
    title: str
    chapter: str | None
    text: str
    page_start: int
    page_end: int
    char_start: int
    char_end: int
    parent_id: str | None
    ordinal: int
    level: int
    flags: list[str]

    def as_row(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class StructureReport:
    units: int
    numbered: list[str]
    gaps: list[str]
    duplicates: list[str]
    coverage: float
    body_chars: int
    covered_chars: int
    supplementary_chunks: int
    untitled: list[str]
    checks: list[StructureCheck] = field(default_factory=list)

    @property
    def structure_ok(self) -> bool:
        """No error-severity structure check failed (else the document is kept page by page)."""
        return not failed(self.checks)


def chunk_id(document_key: str, unit: str, legal_path: str, place: int = 0) -> str:
    """Deterministic id: UUID5 of (document key, unit, legal path) and, from the second chunk
    of one legal path on (a long sub-rule cut in two, a range merged under its first path, a
    number printed twice), its ``place`` among that path's chunks: unique by construction. The
    first chunk of a path keeps the id it always had."""
    suffix = f"|{place}" if place else ""
    return str(uuid.uuid5(NAMESPACE, f"{document_key}|{unit}|{legal_path}{suffix}"))


def decode_units(stream: Stream, doc_type: str) -> Decoded:
    """Find the top-level units of a document, in order, by its own grammar.

    Every row that could open a unit is a candidate (:mod:`~civicsetu_pipelines.ingest.headings`);
    the numbered body is the best sequence through them (:func:`~civicsetu_pipelines.ingest.
    sequence.decode`); forms, annexures and schedules begin where that body ends; chapter
    headings (outside a table of contents) attach to the first unit after them. The candidates
    are kept for the structure checks.
    """
    unit_kind, unit_word = UNIT_WORD.get(doc_type, ("rule", "Rule"))
    kind = load_kinds().get(doc_type)
    margin_first = kind is not None and kind.margin_first
    rows = stream.rows
    paragraphs = unit_kind == "paragraph"
    toc = {i for i, row in enumerate(rows) if is_toc_row(row.text)} | contents_rows(rows)
    edges = body_edges(rows)
    wraps = line_lengths(rows)
    headings: list[Heading] = []
    appendices: list[Appendix] = []
    chapters: list[tuple[int, str]] = []  # (row, chapter name)
    skip_to = -1
    for i, row in enumerate(rows):
        if i in toc or i <= skip_to:
            continue
        text = row.text.strip()
        chapter = is_chapter(text)
        if chapter:
            title = chapter.group(2).strip()
            if not title and i + 1 < len(rows) and rows[i + 1].text.isupper():
                title, skip_to = rows[i + 1].text.strip(), i + 1
            name = f"Chapter {chapter.group(1).upper()}" + (f" — {title}" if title else "")
            chapters.append((i, name))
            continue
        appendix = appendix_at(rows, i)
        if appendix is not None:
            appendices.append(appendix)
        read: Heading | None = None
        if unit_kind == "question":
            heading = question_heading(rows, i)
        else:
            options: dict[str, Any] = dict(paragraphs=paragraphs, notes=stream.margin_notes,
                                           margin_first=margin_first,
                                           edge=edges.get(row.page, 0.0),
                                           wrap_chars=wraps.get(row.page, 1e9))  # fmt: skip
            heading = numbered_heading(rows, i, **options)
            # the number as an OCR'd layer may print it ("2,", "I0."): one more candidate,
            # which the decoder takes only where the sequence expects that number
            read = ocr_read_heading(rows, i, **options)
        headings.extend(h for h in (heading, read) if h is not None)
    _mark_bodyless(stream, headings)
    barriers = [rows[a.row].start for a in appendices if a.strong]
    credible = [rows[h.row].start for h in headings if h.score >= CREDIBLE_SCORE]
    fences = [b for b in barriers if credible and credible[0] < b]
    picked = decode(
        [h.position for h in headings],
        [h.score for h in headings],
        [rows[h.row].start for h in headings],
        barriers=barriers,
        may_cross=[h.score >= CREDIBLE_SCORE and "bodyless" not in h.flags for h in headings],
        start_before=fences[0] if fences else None,
        styles=[h.style for h in headings],
    )
    chosen = [headings[k] for k in picked]
    units: list[Unit] = []
    chapter_name: str | None = None
    previous_row = -1
    for heading in chosen:
        row = rows[heading.row]
        start = row.start
        before = [c for c in chapters if previous_row < c[0] < heading.row]
        if before:
            chapter_name = before[-1][1]
            start = rows[before[-1][0]].start
        units.append(
            Unit(unit_kind, heading.number, f"{unit_word} {heading.number}", heading.title,
                 start, row.end, heading.body_start, chapter_name, list(heading.flags))
        )  # fmt: skip
        previous_row = heading.row + heading.consumed - 1
    body_end = len(stream.text)
    if chosen:
        appendix_units = _appendix_units(stream, appendices, previous_row, body=units)
        units.extend(appendix_units)
        body_end = appendix_units[0].start if appendix_units else body_end
    # Close the units: each runs until the next one starts.
    text_end = len(stream.text)
    for index, unit in enumerate(units):
        unit.end = units[index + 1].start if index + 1 < len(units) else text_end
    first_start = units[0].start if units else text_end
    if rows and rows[0].start < first_start:
        label = "Order" if doc_type == "order" and not units else "Preamble"
        units.insert(
            0, Unit("paragraph", None, label, "", rows[0].start, first_start, rows[0].start)
        )
    return Decoded(units, headings, chosen, appendices, body_end)


def _mark_bodyless(stream: Stream, headings: list[Heading]) -> None:
    """A heading with no text of its own before the next candidate row ("1. Name of the
    promoter:" then "2. Address:") is an item of a list or a form, seldom a unit: weaker."""
    rows_with_heading = {h.row for h in headings}
    for heading in headings:
        last = heading.row + heading.consumed - 1
        own = stream.text[heading.body_start : stream.rows[last].end].strip()
        if not own and (last + 1 >= len(stream.rows) or last + 1 in rows_with_heading):
            heading.score -= BODYLESS_PENALTY
            heading.flags.append("bodyless")


def page_units(stream: Stream) -> list[Unit]:
    """One unit per page: a document whose structure could not be decoded."""
    units = []
    for index, (page, base) in enumerate(stream.page_offsets):
        end = (
            stream.page_offsets[index + 1][1]
            if index + 1 < len(stream.page_offsets)
            else len(stream.text)
        )
        units.append(Unit("page", None, f"Page {page}", "", base, end, base, None,
                          ["structure_failed"]))  # fmt: skip
    return units


def _appendix_units(
    stream: Stream, appendices: Sequence[Appendix], after_row: int, body: Sequence[Unit] = ()
) -> list[Unit]:
    """Forms, annexures and schedules after the numbered body (row ``after_row``): strong
    headings, and an unnamed appendix ("[See rule 3]" above a title in capitals) first. A later
    unnamed one whose named heading the reading lost is named by :func:`_lost_heading`."""
    rows = stream.rows
    units: list[Unit] = []
    unnamed: list[tuple[int, Appendix]] = []  # (index in units it precedes, appendix)
    labels: dict[str, int] = {}
    for appendix in appendices:
        if appendix.row <= after_row or not appendix.strong:
            continue
        row = rows[appendix.row]
        if not appendix.kind:
            if not units:  # "[See rule 3]" later on is a form's own note, not a heading
                units.append(Unit("form", None, appendix.ident, appendix.title, row.start,
                                  row.end, row.end))  # fmt: skip
            else:
                unnamed.append((len(units), appendix))
            continue
        base = f"{appendix.kind} {appendix.ident}".strip()
        labels[base] = labels.get(base, 0) + 1
        label = base if labels[base] == 1 else f"{base} [{labels[base]}]"
        number = label.split(" ", 1)[1] if " " in label else None
        units.append(Unit("form", number, label, appendix.title, row.start, row.end, row.end))
    for at, appendix in reversed(unnamed):
        found = _lost_heading(stream, appendix, units[at - 1], units[at : at + 1], body,
                              body_end=units[0].start)  # fmt: skip
        if found is not None:
            units.insert(at, found)
    return units


_SEE_RULE_NUMBER = re.compile(r"\b(?:rule|regulation|section)s?\s*(\d+)|\band\s+(\d+)", re.I)
_LETTER_IDENT = re.compile(r"^[A-Z]$")


def _lost_heading(
    stream: Stream,
    appendix: Appendix,
    before: Unit,
    after: Sequence[Unit],
    body: Sequence[Unit],
    body_end: int,
) -> Unit | None:
    """An unnamed appendix ("[See rule 6(2) ... and rule 8]" over a title in capitals) whose
    named heading ("FORM D") the reading lost: named from the document itself, when it opens its
    page (nothing above it there but specks), the forms around it leave exactly one letter out
    ("Form C" ... "Form E"), and a rule its note names cites that form ("in Form D"). Flagged
    ``label_from_citations``; anything less certain stays part of the form before it."""
    rows = stream.rows
    row = rows[appendix.row]
    above = [r for r in rows if r.page == row.page and r.start < row.start]
    if any(len(re.sub(r"[^A-Za-z0-9]", "", r.text)) > 3 for r in above):
        return None
    kind, _, ident = before.label.partition(" ")
    if not _LETTER_IDENT.match(ident):
        return None
    missing = chr(ord(ident) + 1)
    if after:
        next_kind, _, next_ident = after[0].label.partition(" ")
        if next_kind != kind or not _LETTER_IDENT.match(next_ident) or next_ident <= missing:
            return None
        if ord(next_ident) - ord(ident) != 2:
            return None
    cited = {a or b for a, b in _SEE_RULE_NUMBER.findall(appendix.title)}
    mention = re.compile(rf"\b{re.escape(kind)}\s*[-'‘’\"“”]?\s*{missing}\b(?![-'’])", re.I)
    ends = [u.start for u in body[1:]] + [body_end]
    citing = [
        u.label for u, end in zip(body, ends, strict=True)
        if u.number in cited and mention.search(stream.text[u.start : end])
    ]  # fmt: skip
    if not citing:
        return None
    below = next_words(rows, appendix.row)
    title = f"{canonicalize(rows[below].text.strip()) if below else ''} {appendix.title}".strip()
    return Unit("form", missing, f"{kind} {missing}", title, row.start, row.end, row.end,
                flags=["label_from_citations"])  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Sub-structure


@dataclass
class Node:
    marker: str | None  # "(2)", "(a)", "(i)" or None for the unit itself
    level: int
    start: int
    end: int
    children: list[Node] = field(default_factory=list)
    printed: str | None = None  # the marker as an OCR'd layer printed it ("(l)" read as (1))


_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_NUMBERED_UNITS = {"section", "rule", "regulation", "question", "paragraph"}


def _letter_index(token: str) -> int:
    """a=1 .. z=26, za=27 .. zz=52 (the Indian drafting sequence after z)."""
    if len(token) == 1:
        return _LETTERS.index(token) + 1
    if token[0] == "z":
        return 26 + _LETTERS.index(token[1]) + 1
    return -1


def _roman_value(token: str) -> int:
    values = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}
    total = 0
    for index, ch in enumerate(token):
        value = values[ch]
        if index + 1 < len(token) and values[token[index + 1]] > value:
            total -= value
        else:
            total += value
    return total


def _marker_at(stream: Stream, start: int, end: int) -> list[tuple[int, str]]:
    """Markers at the starts of rows within [start, end), with their global offsets."""
    found: list[tuple[int, str]] = []
    for row in stream.rows:
        if row.end <= start or row.start >= end:
            continue
        begin = max(row.start, start)
        segment = stream.text[begin : min(row.end, end)]
        match = MARKER.match(segment) or OCR_MARKER.match(segment)
        if match:
            found.append((begin, match.group(1)))
    return found


def parse_tree(stream: Stream, unit: Unit) -> Node:
    """Nest ``(1)``/``(a)``/``(i)`` markers found at row starts, enforcing their sequences."""
    root = Node(None, 0, unit.start, unit.end)
    markers = [(pos, tok) for pos, tok in _marker_at(stream, unit.body_start, unit.end)]
    stack: list[tuple[Node, str, int]] = []  # (node, kind, value)
    expected: dict[int, tuple[str, int]] = {}
    for index, (pos, token) in enumerate(markers):
        kinds = _candidate_kinds(token)
        lookahead = markers[index + 1][1] if index + 1 < len(markers) else None
        # as printed first; then, for "(l)" or "(2l)", its digits as an OCR'd layer confused them
        ordered = _order_kinds(kinds, token, lookahead, stack)
        readings = [(kind, value, None) for kind, value in ordered] + marker_readings(token)
        for kind, value, printed in readings:
            parent_level = _level_for(kind, stack)
            if parent_level is None:
                continue
            siblings_expected = expected.get(parent_level)
            if siblings_expected is None:
                ok = value == 1
                if printed is not None:  # a read (1) opens a list of sub-rules that goes on
                    ok = ok and next_number_follows([t for _, t in markers[index + 1 :]], 1)
            else:
                ok = siblings_expected[0] == kind and value == siblings_expected[1] + 1
                if not ok and kind == "num" and siblings_expected[0] == "num" and not printed:
                    ok = value == siblings_expected[1]  # "(1A)" after "(1)"
            if not ok:
                continue
            while stack and stack[-1][0].level >= parent_level:
                stack.pop()
            for level in [lv for lv in expected if lv > parent_level]:
                del expected[level]
            parent = stack[-1][0] if stack else root
            node = Node(f"({token})" if printed is None else f"({value})", parent_level, pos,
                        unit.end, printed=printed)  # fmt: skip
            parent.children.append(node)
            stack.append((node, kind, value))
            expected[parent_level] = (kind, value)
            break
    _close(root, unit.end)
    return root


def _candidate_kinds(token: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    match = re.fullmatch(r"(\d+)([A-Z]?)", token)
    if match:
        return [("num", int(match.group(1)))]
    if _ROMAN.fullmatch(token):
        out.append(("roman", _roman_value(token)))
    index = _letter_index(token) if re.fullmatch(r"[a-z]{1,2}", token) else -1
    if index > 0:
        out.append(("alpha", index))
    return out


def _order_kinds(
    kinds: list[tuple[str, int]],
    token: str,
    lookahead: str | None,
    stack: list[tuple[Node, str, int]],
) -> list[tuple[str, int]]:
    if len(kinds) < 2:
        return kinds
    # "(i)" may be clause i (after h) or sub-clause i. Look at what follows it.
    roman = [k for k in kinds if k[0] == "roman"]
    alpha = [k for k in kinds if k[0] == "alpha"]
    if lookahead is not None:
        if _ROMAN.fullmatch(lookahead) and _roman_value(lookahead) == roman[0][1] + 1:
            return roman + alpha
        if re.fullmatch(r"[a-z]{1,2}", lookahead) and _letter_index(lookahead) == alpha[0][1] + 1:
            return alpha + roman
    in_alpha = any(kind == "alpha" for _, kind, _ in stack)
    return (roman + alpha) if in_alpha and token == "i" else (alpha + roman)


def _level_for(kind: str, stack: list[tuple[Node, str, int]]) -> int | None:
    """The level a marker of ``kind`` takes: a sibling of the same kind, else a child."""
    for node, existing, _value in reversed(stack):
        if existing == kind:
            return node.level
    rank = {"num": 0, "alpha": 1, "roman": 2}
    deeper = [node for node, existing, _ in stack if rank[existing] < rank[kind]]
    return (deeper[-1].level + 1) if deeper else 1


def _read_markers(node: Node, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], int, str]]:
    """(path, start, flag) of every marker in ``node``'s tree that was read through OCR's
    confusions ("(l)" read as (1)): the chunks that hold it, or are below it, say so."""
    out = []
    for child in node.children:
        here = (*path, child.marker or "")
        if child.printed is not None:
            out.append((here, child.start, read_flag(child.printed, child.marker or "")))
        out.extend(_read_markers(child, here))
    return out


def _close(node: Node, end: int) -> None:
    node.end = end
    for index, child in enumerate(node.children):
        child_end = node.children[index + 1].start if index + 1 < len(node.children) else end
        _close(child, child_end)


# ---------------------------------------------------------------------------------------------
# Chunks


@dataclass
class _Piece:
    path: tuple[str, ...]
    start: int
    end: int
    last_path: tuple[str, ...] | None = None  # set when short siblings were merged in
    lead: bool = False  # the lead-in of a split node (its text before the first child)


def _pieces(node: Node, path: tuple[str, ...], stream: Stream, max_chars: int) -> list[_Piece]:
    """Split a node along its children until each piece fits ``max_chars``.

    A split node yields its lead-in ("(2) The promoter shall ..., namely:—") as a piece of its
    own, labelled with the node's path, followed by its children's pieces.
    """
    size = len(stream.text[node.start : node.end].strip())
    if size <= max_chars or not node.children:
        return [_Piece(path, node.start, node.end)]
    pieces = [_Piece(path, node.start, node.children[0].start, lead=True)]
    for child in node.children:
        pieces.extend(_pieces(child, (*path, child.marker or ""), stream, max_chars))
    return pieces


def _merge_short(
    pieces: list[_Piece], stream: Stream, min_chars: int, max_chars: int
) -> list[_Piece]:
    """Short pieces join a neighbour rather than stand alone (or vanish).

    A short lead-in absorbs what follows it (a nested lead-in, or its first child) while the
    result fits ``max_chars``; any other short piece joins its previous sibling (even past
    ``max_chars``: short pieces never stand alone), whose label then names the range
    (``Section 2(b)-(c)``).
    """

    def size(piece: _Piece) -> int:
        return len(stream.text[piece.start : piece.end].strip())

    merged: list[_Piece] = []
    for piece in pieces:
        if merged:
            prev = merged[-1]
            fits = len(stream.text[prev.start : piece.end].strip()) <= max_chars
            inside = piece.path[: len(prev.path)] == prev.path
            if prev.lead and size(prev) < min_chars and inside and fits:
                prev.end, prev.lead = piece.end, piece.lead
                continue
            if size(piece) < min_chars and not piece.lead and _same_parent(prev, piece):
                prev.end = piece.end
                if len(piece.path) == len(prev.path):
                    prev.last_path = piece.path
                continue
        merged.append(piece)
    return merged


def _same_parent(a: _Piece, b: _Piece) -> bool:
    return a.path[:-1] == b.path[:-1] or b.path[: len(a.path)] == a.path


# A form's own numbered paragraphs ("12. DEFECT LIABILITY:" in a model agreement for sale, "3.
# Address of the applicant" in an application): a row that opens with a number and a full stop,
# or with the paragraph's first sub-number ("4.1 If the Promoter fails ...": a paragraph whose
# own number is printed only in its sub-paragraphs').
_FORM_PARAGRAPH = re.compile(r"^\s*(\d{1,3})\.(1\s|\s)\s*\S")
FORM_PARAGRAPH_STEP = 3  # the most a number may advance over the last (a number print lost)
MIN_FORM_PARAGRAPHS = 5  # fewer is a list inside the form, not the form's own numbering


def form_paragraphs(rows: Sequence[StreamRow]) -> list[tuple[int, int]]:
    """The numbered paragraphs a form is written in (``rows``: the rows inside it, in order), as
    (number, stream offset of its row): the
    longest run of rows opening "1.", then each a number 1 to :data:`FORM_PARAGRAPH_STEP` above
    the last, in the order of the document; a row "N.1" opens paragraph N where no "N." does
    (of equally long runs, the one with more "N." rows, then the earliest). A list that restarts
    at 1 (the witnesses' "1. Signature") or a number out of the run (a year, a list item) is
    left inside its paragraph; fewer than :data:`MIN_FORM_PARAGRAPHS`: none."""
    heads = [
        (int(m.group(1)), row.start, not m.group(2).startswith("1"))
        for row in rows
        if (m := _FORM_PARAGRAPH.match(row.text))
    ]
    runs: list[tuple[int, int, list[int]]] = []  # per head: (length, "N." rows, the run)
    for i, (number, _, strong) in enumerate(heads):
        run = (1, int(strong), [i]) if number == 1 else (0, 0, [])
        for j in range(i):
            length, strong_rows, path = runs[j]
            step = number - heads[j][0]
            if (
                1 <= step <= FORM_PARAGRAPH_STEP
                and length
                and (length + 1, strong_rows + strong) > run[:2]
            ):
                run = (length + 1, strong_rows + int(strong), [*path, i])
        runs.append(run)
    best = max(runs, key=lambda r: r[:2], default=(0, 0, []))
    return [heads[i][:2] for i in best[2]] if best[0] >= MIN_FORM_PARAGRAPHS else []


def _row_parts(stream: Stream, unit: Unit, max_chars: int) -> list[_Piece]:
    """Cut a long unnumbered unit (a form, an annexure) into parts: along its own numbered
    paragraphs (:func:`form_paragraphs`: ``Agreement For Sale para 12``) where it has them, and
    each part longer than ``max_chars`` at row boundaries (``... (part 2)``)."""
    if len(stream.text[unit.start : unit.end].strip()) <= max_chars:
        return [_Piece((), unit.start, unit.end)]
    rows = [row for row in stream.rows if unit.start < row.start < unit.end]
    paragraphs = form_paragraphs(rows) if unit.unit == "form" else []
    if not paragraphs:
        return _sized_parts(stream.text, rows, (), unit.start, unit.end, max_chars)
    starts = [start for _, start in paragraphs]
    pieces = _sized_parts(stream.text, rows, (), unit.start, starts[0], max_chars)
    for (number, start), end in zip(paragraphs, [*starts[1:], unit.end], strict=True):
        pieces += _sized_parts(stream.text, rows, (paragraph_word(number),), start, end, max_chars)
    return pieces


def _sized_parts(
    text: str,
    rows: Sequence[StreamRow],
    path: tuple[str, ...],
    start: int,
    end: int,
    max_chars: int,
) -> list[_Piece]:
    """``text[start:end]`` cut at the boundaries of ``rows`` into parts of about ``max_chars``:
    the first labelled ``path``, the further ones ``path`` + `` (part N)``."""
    cuts = [start]
    for row in rows:
        if start < row.start < end and row.start - cuts[-1] > max_chars * 0.8:
            if len(text[row.start : end].strip()) < MIN_CHARS:
                break  # a few words left: they stay with the part before
            cuts.append(row.start)
    bounds = [*cuts, end]
    return [
        _Piece(path if n == 0 else (*path, part_word(n + 1)), bounds[n], bounds[n + 1])
        for n in range(len(cuts))
    ]


def _section_label(unit: Unit, piece: _Piece) -> str:
    """The unit a chunk is cited, scored and ranked as: its unit's label, or a form's numbered
    paragraph (``Agreement For Sale para 12``: a model agreement is read by its clauses)."""
    if unit.unit == "form" and piece.path and split_paragraph(piece.path[0])[1] is not None:
        return unit.label + piece.path[0]
    return unit.label


def _label(unit: Unit, piece: _Piece) -> str:
    suffix = "".join(piece.path)
    label = unit.label + suffix
    if (
        piece.last_path
        and piece.last_path != piece.path
        and len(piece.last_path) == len(piece.path)
    ):
        label += "-" + piece.last_path[-1]
    return label


@dataclass
class Structure:
    """A document's structure as read: its stream, decoded units (with the candidates) and the
    outcome of every structure check."""

    stream: Stream
    decoded: Decoded
    checks: list[StructureCheck]


def read_structure(pages: Sequence[dict[str, Any]], doc_type: str) -> Structure:
    """Decode the structure of one document's pages and check it."""
    stream = build_stream(pages)
    decoded = decode_units(stream, doc_type)
    return Structure(stream, decoded, check_structure(stream, decoded, doc_type))


def build_chunks(
    pages: Sequence[dict[str, Any]],
    *,
    document_key: str,
    jurisdiction: str,
    doc_type: str,
    max_chars: int = MAX_CHARS,
    min_chars: int = MIN_CHARS,
    page_flags: dict[int, list[str]] | None = None,
    structure: Structure | None = None,
) -> tuple[list[Chunk], StructureReport]:
    """Parse the structure of one document's pages and cut it into chunks (``structure``: the
    pages' :func:`read_structure`, when the caller has read it already)."""
    structure = structure or read_structure(pages, doc_type)
    stream, decoded, checks = structure.stream, structure.decoded, structure.checks
    units = decoded.units
    if failed(checks):
        # A structure that fails its own checks is not served as units: the document is kept
        # page by page (every character still in a chunk) and the failed checks say why.
        units = page_units(stream)
    chunks: list[Chunk] = []
    covered = bytearray(len(stream.text))
    ordinal = 0
    places: Counter[tuple[str, str]] = Counter()  # chunks so far of each (unit, legal path)
    for unit in units:
        tree = parse_tree(stream, unit) if unit.unit not in {"form", "paragraph", "page"} else None
        if tree is not None:
            pieces = _merge_short(
                _pieces(tree, (), stream, max_chars), stream, min_chars, max_chars
            )
        else:
            pieces = _row_parts(stream, unit, max_chars)
        reads = _read_markers(tree) if tree is not None else []
        ids: dict[tuple[str, ...], str] = {}
        for piece in pieces:
            text = canonicalize(stream.text[piece.start : piece.end])
            if not text:
                continue
            # Numbered units: "18(2)(a)"; forms and other unnumbered units: their label.
            head = unit.number if unit.unit in _NUMBERED_UNITS and unit.number else unit.label
            legal_path = head + "".join(piece.path)
            cid = chunk_id(document_key, unit.unit, legal_path, places[unit.unit, legal_path])
            places[unit.unit, legal_path] += 1
            ids[piece.path] = cid
            parent = None
            for depth in range(len(piece.path) - 1, -1, -1):
                if piece.path[:depth] in ids:
                    parent = ids[piece.path[:depth]]
                    break
            page_start, char_start = stream.locate(piece.start)
            page_end, char_end = stream.locate(max(piece.start, piece.end - 1))
            flags = list(unit.flags)
            for path, start, flag in reads:  # a sub-unit's number read through OCR's confusions
                inside = piece.start <= start < piece.end or piece.path[: len(path)] == path
                if inside and flag not in flags:
                    flags.append(flag)
            for page in range(page_start, page_end + 1):
                for flag in (page_flags or {}).get(page, []):
                    if flag not in flags:
                        flags.append(flag)
            chunks.append(
                Chunk(
                    chunk_id=cid,
                    document_key=document_key,
                    jurisdiction=jurisdiction,
                    doc_type=doc_type,
                    unit=unit.unit,
                    number=unit.number,
                    legal_path=legal_path,
                    label=_label(unit, piece),
                    section_label=_section_label(unit, piece),
                    title=unit.title,
                    chapter=unit.chapter,
                    text=text,
                    page_start=page_start,
                    page_end=page_end,
                    char_start=char_start,
                    char_end=char_end + 1,
                    parent_id=parent,
                    ordinal=ordinal,
                    level=len(piece.path),
                    flags=flags,
                )
            )
            ordinal += 1
            for k in range(piece.start, piece.end):
                covered[k] = 1
    body = [k for k, ch in enumerate(stream.text) if not ch.isspace()]
    covered_chars = sum(covered[k] for k in body)
    supplementary = _supplementary(stream, covered, document_key, jurisdiction, doc_type, ordinal)
    chunks.extend(supplementary)  # coverage below is the units' own; these carry the rest
    numbered = [u.number for u in units if u.number and u.unit != "form"]
    report = StructureReport(
        units=len(units),
        numbered=[n for n in numbered if n],
        gaps=_gaps([n for n in numbered if n]),
        duplicates=sorted({n for n in numbered if n and numbered.count(n) > 1}),
        coverage=(covered_chars / len(body)) if body else 0.0,
        body_chars=len(body),
        covered_chars=covered_chars,
        supplementary_chunks=len(supplementary),
        untitled=[u.label for u in units if "untitled" in u.flags],
        checks=checks,
    )
    return chunks, report


def _supplementary(
    stream: Stream,
    covered: bytearray,
    document_key: str,
    jurisdiction: str,
    doc_type: str,
    ordinal: int,
) -> list[Chunk]:
    """Page-level chunks for body text that no unit took, so nothing is silently lost."""
    out: list[Chunk] = []
    for page, base in stream.page_offsets:
        end = next((s for p, s in stream.page_offsets if s > base), len(stream.text))
        missing = [k for k in range(base, end) if not covered[k] and not stream.text[k].isspace()]
        if not missing:
            continue
        text = canonicalize(stream.text[missing[0] : missing[-1] + 1])
        label = f"Page {page} (unassigned)"
        out.append(
            Chunk(
                chunk_id=chunk_id(document_key, "page", label),
                document_key=document_key,
                jurisdiction=jurisdiction,
                doc_type=doc_type,
                unit="page",
                number=None,
                legal_path=label,
                label=label,
                section_label=label,
                title="",
                chapter=None,
                text=text,
                page_start=page,
                page_end=page,
                char_start=missing[0] - base,
                char_end=missing[-1] - base + 1,
                parent_id=None,
                ordinal=ordinal + len(out),
                level=0,
                flags=["supplementary"],
            )
        )
    return out


def _gaps(numbers: Iterable[str]) -> list[str]:
    ints = sorted({int(re.match(r"\d+", n).group(0)) for n in numbers})  # type: ignore[union-attr]
    if not ints:
        return []
    present = set(ints)
    return [str(n) for n in range(1, ints[-1] + 1) if n not in present]
