"""Legal structure from parsed pages: top-level units, their sub-structure, and chunks.

Pure domain code (no Dagster). Every number, label and title comes from the parsed text:

* Acts: ``CHAPTER`` headings, sections ``N.`` / ``NA.`` whose titles are the margin notes beside
  them (the Gazette print), or the inline ``N. Title.—`` form.
* Rules and regulations: ``N. Title.-`` / ``N. Title.—`` / title on the next row / ``Rule N``.
* FAQs: numbered question/answer pairs. Orders: numbered paragraphs, else the whole order.
* Forms, schedules and annexures are units of their own; once the appendix begins, numbered
  rows inside it are never taken for rules.

Numbers must run in sequence (``N`` follows ``N-1``, ``NA`` follows ``N``), which is what keeps a
year such as ``2016.`` or a cross-reference from being taken for a section. Long units are split
along their own numbering (``(1)``, ``(a)``, ``(i)``) with the markers kept in the text.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from civicsetu_pipelines.base import canonicalize

NAMESPACE = uuid.UUID("5b0d6a43-7f4e-4bb1-9a4e-2f1c0c1e9a11")
MAX_CHARS = 2400
MIN_CHARS = 160

UNIT_WORD = {
    "act": ("section", "Section"),
    "rules": ("rule", "Rule"),
    "regulations": ("regulation", "Regulation"),
    "faq": ("question", "Question"),
    "order": ("paragraph", "Paragraph"),
}

_CHAPTER = re.compile(r"^CHAPTER\s+([IVXLC]+[A-Z]?|\d+[A-Z]?)\b\.?\s*[-—:]?\s*(.*)$", re.I)
_NUMBERED = re.compile(r"^(\d{1,3})([A-Z]{0,2})\s*\.\s*(.*)$")
_RULE_WORD = re.compile(r"^(?:RULE|Rule)\s+(\d{1,3})([A-Z]?)\s*[.:—-]?\s*(.*)$")
_APPENDIX = re.compile(
    r"^(?P<kind>FORM|Form|ANNEXURE|Annexure|ANNEXURE|APPENDIX|Appendix|SCHEDULE|Schedule"
    r"|THE SCHEDULE|The Schedule|(?:FIRST|SECOND|THIRD|First|Second|Third) SCHEDULE)"
    r"(?:\s*[-—–:]?\s*(?:No\.\s*)?['\"]?(?P<id>[A-Z]{1,2}|\d{1,2}|[IVX]{1,4})['\"]?)?"
    r"\s*[.:]?\s*(?P<rest>.*)$"
)
_TITLE_END = re.compile(r"(?:\.\s*[-—]+|:\s*[-—]+|\.\s*$|\s[—]\s*)")
_MARKER = re.compile(r"^\(\s*([0-9]{1,3}[A-Z]?|[a-z]{1,2}|[ivxlc]{1,6})\s*\)\s*")
_ROMAN = re.compile(r"^[ivxlc]+$")


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
                )
            )
        parts.append(text)
        cursor += len(text) + 1
    return Stream("\n".join(parts), rows, offsets, notes)


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


def chunk_id(document_key: str, unit: str, legal_path: str) -> str:
    """Deterministic id: UUID5 of (document key, unit, legal path)."""
    return str(uuid.uuid5(NAMESPACE, f"{document_key}|{unit}|{legal_path}"))


def _next_numbers(last: tuple[int, str] | None) -> set[tuple[int, str]]:
    if last is None:
        return {(1, "")}
    number, suffix = last
    allowed = {(number + 1, ""), (number + 2, "")}
    allowed.add((number, chr(ord(suffix[-1]) + 1) if suffix else "A"))
    return allowed


def _title_from_margin(stream: Stream, row: StreamRow, used: set[tuple[int, int]]) -> str | None:
    best: tuple[float, int] | None = None
    notes = stream.margin_notes.get(row.page, [])
    for index, note in enumerate(notes):
        if note.get("kind") != "title" or (row.page, index) in used:
            continue
        distance = abs(float(note["y0"]) - row.y0)
        if distance <= 14 and (best is None or distance < best[0]):
            best = (distance, index)
    if best is None:
        return None
    used.add((row.page, best[1]))
    return str(notes[best[1]]["text"]).rstrip(" .").strip()


def _split_title(rest: str) -> tuple[str, str, bool]:
    """Split ``Title.— body`` into (title, body, terminated)."""
    match = re.search(r"\.\s*[-—]+\s*|:\s*[-—]+\s*|\s—\s*", rest)
    if match and match.start() > 2:
        return rest[: match.start()].strip(), rest[match.end() :], True
    return rest.strip(), "", False


def segment_units(stream: Stream, doc_type: str) -> list[Unit]:
    """Find the top-level units of a document, in order."""
    unit_kind, unit_word = UNIT_WORD.get(doc_type, ("rule", "Rule"))
    units: list[Unit] = []
    rows = stream.rows
    last: tuple[int, str] | None = None
    chapter: str | None = None
    pending_start: int | None = None  # a chapter heading waiting for its first unit
    in_appendix = False
    used_notes: set[tuple[int, int]] = set()
    appendix_labels: dict[str, int] = {}
    i = 0
    while i < len(rows):
        row = rows[i]
        text = row.text.strip()
        chap = _CHAPTER.match(text) if not in_appendix else None
        if chap and len(text) < 120:
            title = chap.group(2).strip()
            if not title and i + 1 < len(rows) and rows[i + 1].text.isupper():
                title = rows[i + 1].text.strip()
                i += 1
            chapter = f"Chapter {chap.group(1).upper()}" + (f" — {title}" if title else "")
            pending_start = row.start if pending_start is None else pending_start
            i += 1
            continue
        if (
            not in_appendix
            and last is not None
            and _SEE_RULE.match(text)
            and i + 1 < len(rows)
            and rows[i + 1].text.isupper()
            and len(rows[i + 1].text) <= 90
        ):
            # An unnamed appendix: "[See rule 3]" followed by its title in capitals.
            title = canonicalize(rows[i + 1].text).title()
            units.append(Unit("form", None, title, text, row.start, row.end, row.end, None))
            in_appendix = True
            pending_start = None
            i += 2
            continue
        appendix = _APPENDIX.match(text)
        if appendix and len(text) <= 90 and last is not None and _is_appendix(appendix):
            kind = appendix.group("kind").split()[-1].capitalize()
            ident = appendix.group("id") or ""
            base = f"{kind} {ident}".strip()
            count = appendix_labels.get(base, 0) + 1
            appendix_labels[base] = count
            label = base if count == 1 else f"{base} [{count}]"
            title = appendix.group("rest").strip()
            if not title and i + 1 < len(rows) and len(rows[i + 1].text) < 120:
                title = rows[i + 1].text.strip()
            if _SEE_RULE.match(title) and i + 2 < len(rows) and len(rows[i + 2].text) < 120:
                # "FORM 'A'" / "[See rule 3(2)]" / "APPLICATION FOR REGISTRATION OF PROJECT"
                title = f"{rows[i + 2].text.strip()} {title}"
            units.append(
                Unit(
                    "form",
                    label.split(" ", 1)[1] if " " in label else None,
                    label,
                    title,
                    row.start,
                    row.end,
                    row.end,
                    None,
                )
            )
            in_appendix = True
            pending_start = None
            i += 1
            continue
        if not in_appendix:
            found = _match_numbered(stream, rows, i, doc_type, last, used_notes)
            if found is not None:
                number, title, body_start, consumed, flags = found
                start = pending_start if pending_start is not None else row.start
                label = f"{unit_word} {number}"
                units.append(
                    Unit(
                        unit_kind, number, label, title, start, row.end, body_start, chapter, flags
                    )
                )
                pending_start = None
                match = re.match(r"(\d+)([A-Z]*)", number)
                assert match is not None
                last = (int(match.group(1)), match.group(2))
                i += consumed
                continue
        i += 1
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
    return units


def _is_appendix(match: re.Match[str]) -> bool:
    """A heading row of a form, annexure or schedule, not a mention of one in prose."""
    kind = match.group("kind")
    rest = match.group("rest").strip()
    if not rest or re.match(r"^\[\s*See\b", rest, re.I):
        return True
    if not kind.isupper():
        return False  # "Schedule C (Payment Plan)." inside an agreement is prose
    letters = re.sub(r"[^A-Za-z]", "", rest)
    return bool(letters) and (letters.isupper() or rest[:1] in "-—–")


_SEE_RULE = re.compile(r"^\[\s*See\s+(?:rule|rules|section|regulation)s?\s+[^\]]{1,40}\]\s*$", re.I)


def _match_numbered(
    stream: Stream,
    rows: list[StreamRow],
    i: int,
    doc_type: str,
    last: tuple[int, str] | None,
    used_notes: set[tuple[int, int]],
) -> tuple[str, str, int, int, list[str]] | None:
    """Return (number, title, body_start, rows consumed, flags) if row ``i`` starts a unit."""
    row = rows[i]
    text = row.text
    if doc_type == "faq":
        return _match_question(rows, i, last)
    match = _NUMBERED.match(text) or _RULE_WORD.match(text)
    if not match:
        return None
    number, suffix, rest = int(match.group(1)), match.group(2), match.group(3)
    if (number, suffix) not in _next_numbers(last):
        return None
    if rest and not (rest[0].isupper() or rest[0] in "(\"'“‘["):
        return None  # "5. of the Act" is prose, not a heading
    # Skipping a number (a heading the parser missed) needs strong evidence of a heading: a
    # margin title, or an inline title with its terminator.
    skips = last is not None and (number, suffix) == (last[0] + 2, "")
    label_number = f"{number}{suffix}"
    offset_in_row = len(text) - len(rest)
    flags: list[str] = []
    if doc_type == "act":
        title = _title_from_margin(stream, row, used_notes)
        if title is not None:
            return label_number, title, row.start + offset_in_row, 1, flags
    if skips and not _split_title(rest)[2]:
        return None
    # Inline title: "N. Title.— body", possibly continued on following rows.
    consumed = 1
    body_start = row.end
    title, body, terminated = _split_title(rest)
    if terminated:
        body_start = row.start + offset_in_row + (len(rest) - len(body))
    elif not rest or not _starts_body(rest):
        # The title may run onto the next rows until its terminator.
        joined = rest
        for extra in range(1, 4):
            if i + extra >= len(rows):
                break
            nxt = rows[i + extra]
            if _MARKER.match(nxt.text) or _NUMBERED.match(nxt.text):
                break
            joined = f"{joined} {nxt.text}".strip()
            title, body, terminated = _split_title(joined)
            if terminated:
                consumed = extra + 1
                body_start = nxt.end - len(body)
                break
        if not terminated:
            title, body_start, consumed = rest.strip(), row.end, 1
            if not title and i + 1 < len(rows) and not _MARKER.match(rows[i + 1].text):
                title, body_start, consumed = rows[i + 1].text.strip(), rows[i + 1].end, 2
    else:
        title = ""
        body_start = row.start + offset_in_row
        flags.append("untitled")
    title = title.rstrip(" .:-—").strip()
    if doc_type == "act" and not title:
        flags.append("untitled")
    return label_number, title, body_start, consumed, flags


def _match_question(
    rows: list[StreamRow], i: int, last: tuple[int, str] | None
) -> tuple[str, str, int, int, list[str]] | None:
    """A question: consecutive bold rows ending in "?", one of them carrying "N."."""
    if not rows[i].bold:
        return None
    first = i
    while i < len(rows) and rows[i].bold and re.fullmatch(r"[^a-z?]+:", rows[i].text.strip()):
        i += 1  # a category heading such as "STATUS:" above the question
    if i >= len(rows):
        return None
    joined, j = "", i
    while j < len(rows) and rows[j].bold and j - i < 5:
        joined = f"{joined} {rows[j].text}".strip()
        j += 1
        if joined.endswith("?"):
            break
    if not joined.endswith("?"):
        return None
    number = re.search(r"(?:^|\s)(\d{1,3})\.(?:\s|$)", joined)
    if not number or (int(number.group(1)), "") not in _next_numbers(last):
        return None
    title = canonicalize(joined[: number.start()] + " " + joined[number.end() :])
    return number.group(1), title, rows[j - 1].end, j - first, []


def _starts_body(rest: str) -> bool:
    return bool(_MARKER.match(rest)) or rest.startswith(("In these", "In this", "The ", "Every "))


# ---------------------------------------------------------------------------------------------
# Sub-structure


@dataclass
class Node:
    marker: str | None  # "(2)", "(a)", "(i)" or None for the unit itself
    level: int
    start: int
    end: int
    children: list[Node] = field(default_factory=list)


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
        match = _MARKER.match(segment)
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
        for kind, value in _order_kinds(kinds, token, lookahead, stack):
            parent_level = _level_for(kind, stack)
            if parent_level is None:
                continue
            siblings_expected = expected.get(parent_level)
            if siblings_expected is None:
                ok = value == 1
            else:
                ok = siblings_expected[0] == kind and value == siblings_expected[1] + 1
                if not ok and kind == "num" and siblings_expected[0] == "num":
                    ok = value == siblings_expected[1]  # "(1A)" after "(1)"
            if not ok:
                continue
            while stack and stack[-1][0].level >= parent_level:
                stack.pop()
            for level in [lv for lv in expected if lv > parent_level]:
                del expected[level]
            parent = stack[-1][0] if stack else root
            node = Node(f"({token})", parent_level, pos, unit.end)
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


def _row_parts(stream: Stream, unit: Unit, max_chars: int) -> list[_Piece]:
    """Cut a long unnumbered unit (a form, an annexure) at row boundaries into parts."""
    if len(stream.text[unit.start : unit.end].strip()) <= max_chars:
        return [_Piece((), unit.start, unit.end)]
    cuts = [unit.start]
    for row in stream.rows:
        if unit.start < row.start < unit.end and row.start - cuts[-1] > max_chars * 0.8:
            cuts.append(row.start)
    bounds = [*cuts, unit.end]
    return [
        _Piece(() if n == 0 else (f" (part {n + 1})",), bounds[n], bounds[n + 1])
        for n in range(len(cuts))
    ]


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


def build_chunks(
    pages: Sequence[dict[str, Any]],
    *,
    document_key: str,
    jurisdiction: str,
    doc_type: str,
    max_chars: int = MAX_CHARS,
    min_chars: int = MIN_CHARS,
    page_flags: dict[int, list[str]] | None = None,
) -> tuple[list[Chunk], StructureReport]:
    """Parse the structure of one document's pages and cut it into chunks."""
    stream = build_stream(pages)
    units = segment_units(stream, doc_type)
    chunks: list[Chunk] = []
    covered = bytearray(len(stream.text))
    ordinal = 0
    for unit in units:
        tree = parse_tree(stream, unit) if unit.unit not in {"form", "paragraph"} else None
        if tree is not None:
            pieces = _merge_short(
                _pieces(tree, (), stream, max_chars), stream, min_chars, max_chars
            )
        else:
            pieces = _row_parts(stream, unit, max_chars)
        ids: dict[tuple[str, ...], str] = {}
        for piece in pieces:
            text = canonicalize(stream.text[piece.start : piece.end])
            if not text:
                continue
            # Numbered units: "18(2)(a)"; forms and other unnumbered units: their label.
            head = unit.number if unit.unit in _NUMBERED_UNITS and unit.number else unit.label
            legal_path = head + "".join(piece.path)
            cid = chunk_id(document_key, unit.unit, legal_path)
            ids[piece.path] = cid
            parent = None
            for depth in range(len(piece.path) - 1, -1, -1):
                if piece.path[:depth] in ids:
                    parent = ids[piece.path[:depth]]
                    break
            page_start, char_start = stream.locate(piece.start)
            page_end, char_end = stream.locate(max(piece.start, piece.end - 1))
            flags = list(unit.flags)
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
                    section_label=unit.label,
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
