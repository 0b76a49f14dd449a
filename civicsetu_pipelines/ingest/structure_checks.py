"""Self-checks of a decoded document structure: failures are loud, named and located.

Pure domain code. Each check looks at what :func:`~civicsetu_pipelines.ingest.legal_structure.
decode_units` made of a document and says, with the unit and page, where it went wrong:

* ``sequence`` (error): the top-level numbering runs 1, 2, 3 ... with no gap or repeat
  (inserted ``3A`` / ``3-A`` allowed); the message names the first place it broke.
* ``swallowed`` (error): no unit holds a credible heading that would have continued the
  sequence (``9. Agreement for sale.—`` inside rule 8, or rules inside a form).
* ``titles`` (error): titles are titles -- bounded, no ``(1)``, not a sentence.
* ``numbered_share`` (error): in a document whose kind is numbered (Act, rules, regulations,
  FAQ), a good share of the text before the forms sits in numbered units, not in a preamble.
* ``length_outliers`` (warning): no unit is many times longer than its siblings without the
  sub-structure that would explain it.
* ``cited_units`` (warning): every rule or regulation the document's own forms cite
  (``[See rule 3(2)]``) exists in it, or is named as missing.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from civicsetu_pipelines.ingest.headings import CREDIBLE_SCORE, MARKER, UNIT_WORD, title_problem
from civicsetu_pipelines.ingest.sequence import Position, transition_cost
from civicsetu_pipelines.ingest.structure_types import Decoded, Stream, Unit

ERROR = "error"
WARNING = "warning"
NUMBERED_KINDS = frozenset({"act", "rules", "regulations", "faq"})
MIN_NUMBERED_SHARE = 0.35  # a long notification preamble before three short rules is real
OUTLIER_FACTOR = 8.0
OUTLIER_MIN_CHARS = 12_000
MARKER_ROWS_PER_CHARS = 2_500  # a long unit with a marker row per this many characters is explained

_CITED = re.compile(
    r"\b(?:rules?|regulations?)\s+(\d{1,3})([A-Z]?)\b(?!\s+of\s+the\s+\w+\s+Act)", re.I
)


@dataclass(frozen=True)
class StructureCheck:
    name: str
    passed: bool
    severity: str  # error | warning
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_structure(stream: Stream, decoded: Decoded, doc_type: str) -> list[StructureCheck]:
    """Every structure check of one decoded document, in a fixed order."""
    numbered = [u for u in decoded.units if u.number and u.unit not in {"form"}]
    return [
        _sequence(stream, decoded, doc_type, numbered),
        _swallowed(stream, decoded),
        _titles(numbered, doc_type),
        _numbered_share(stream, decoded, doc_type, numbered),
        _length_outliers(stream, decoded),
        _cited_units(stream, decoded, doc_type, numbered),
    ]


def failed(checks: list[StructureCheck], severity: str = ERROR) -> list[StructureCheck]:
    return [c for c in checks if not c.passed and c.severity == severity]


def _page(stream: Stream, offset: int) -> int:
    return stream.locate(offset)[0]


def _position(unit: Unit) -> Position:
    match = re.fullmatch(r"(\d+)([A-Z]*)", unit.number or "")
    return Position(int(match.group(1)), match.group(2)) if match else Position(0)


def _sequence(
    stream: Stream, decoded: Decoded, doc_type: str, numbered: list[Unit]
) -> StructureCheck:
    if not numbered:
        if doc_type in NUMBERED_KINDS:
            return StructureCheck(
                "sequence",
                False,
                ERROR,
                f"no numbered {UNIT_WORD.get(doc_type, ('unit',))[0]}s found: "
                "the document is kept page by page",
            )
        return StructureCheck("sequence", True, ERROR, "unnumbered document: one unit")
    previous: Position | None = None
    for unit in numbered:
        here = _position(unit)
        cost = transition_cost(previous, here)
        if cost is None or cost > 0:
            where = f"on page {_page(stream, unit.start)}"
            if previous is None:
                message = f"the numbering starts at {unit.label} {where}, not at 1"
            elif cost is None:
                message = f"{unit.label} {where} repeats or goes back after number {previous.label}"
            else:
                message = f"number {previous.label} is followed by {unit.label} {where}: a gap"
            return StructureCheck("sequence", False, ERROR, message)
        previous = here
    return StructureCheck(
        "sequence",
        True,
        ERROR,
        f"{numbered[0].label} to {numbered[-1].label}, {len(numbered)} units in sequence",
    )


def _swallowed(stream: Stream, decoded: Decoded) -> StructureCheck:
    chosen = {h.row for h in decoded.chosen}
    units = [u for u in decoded.units if u.number or u.unit == "form"]
    numbered = [u for u in units if u.unit != "form"]
    last = _position(numbered[-1]) if numbered else None
    for heading in decoded.headings:
        if heading.row in chosen or heading.score < CREDIBLE_SCORE or "bodyless" in heading.flags:
            continue
        offset = stream.rows[heading.row].start
        holder = next((u for u in units if u.start <= offset < u.end), None)
        if holder is None:
            continue
        before = last if holder.unit == "form" else _position(holder)
        if before is None or transition_cost(before, heading.position) != 0:
            continue
        if holder.unit == "form" and _restarted(stream, decoded, holder, heading.row, last):
            continue  # the form's own numbering (1. Name, 2. Address ...), not the body's
        return StructureCheck(
            "swallowed",
            False,
            ERROR,
            f"{holder.label} holds a heading that continues the sequence: "
            f"'{stream.rows[heading.row].text[:60]}' on page {_page(stream, offset)}",
        )
    return StructureCheck("swallowed", True, ERROR, "no unit holds the next unit's heading")


def _restarted(
    stream: Stream, decoded: Decoded, form: Unit, row: int, last: Position | None
) -> bool:
    """Whether ``form`` restarted its own numbering before row ``row`` (at or below ``last``)."""
    return any(
        form.start <= stream.rows[h.row].start
        and h.row < row
        and last is not None
        and h.position.number <= last.number
        for h in decoded.headings
    )


def _titles(numbered: list[Unit], doc_type: str) -> StructureCheck:
    if doc_type == "faq":
        return StructureCheck("titles", True, ERROR, "FAQ questions are their own titles")
    bad = [(u.label, problem) for u in numbered if u.title and (problem := title_problem(u.title))]
    if bad:
        label, problem = bad[0]
        return StructureCheck(
            "titles", False, ERROR, f"{len(bad)} title(s) are not titles, first {label}: {problem}"
        )
    untitled = sum(1 for u in numbered if not u.title)
    return StructureCheck(
        "titles", True, ERROR, f"{len(numbered) - untitled} titled, {untitled} untitled"
    )


def _visible(text: str) -> int:
    """Characters that are not whitespace (``str.split`` splits on exactly ``str.isspace``)."""
    return sum(map(len, text.split()))


def _numbered_share(
    stream: Stream, decoded: Decoded, doc_type: str, numbered: list[Unit]
) -> StructureCheck:
    if doc_type not in NUMBERED_KINDS:
        return StructureCheck("numbered_share", True, ERROR, f"not required of a {doc_type}")
    total = _visible(stream.text[: decoded.body_end])
    inside = sum(_visible(stream.text[u.start : min(u.end, decoded.body_end)]) for u in numbered)
    share = inside / total if total else 0.0
    return StructureCheck(
        "numbered_share",
        share >= MIN_NUMBERED_SHARE,
        ERROR,
        f"{share:.0%} of the text before the forms is in numbered units",
    )


def _length_outliers(stream: Stream, decoded: Decoded) -> StructureCheck:
    units = [u for u in decoded.units if u.number and u.unit != "form"]
    if len(units) < 3:
        return StructureCheck("length_outliers", True, WARNING, "too few units to compare")
    sizes = {u.label: u.end - u.start for u in units}
    median = statistics.median(sizes.values())
    for unit in units:
        size = sizes[unit.label]
        if size < max(OUTLIER_FACTOR * median, OUTLIER_MIN_CHARS):
            continue
        markers = sum(
            1 for r in stream.rows if unit.start <= r.start < unit.end and MARKER.match(r.text)
        )
        if markers * MARKER_ROWS_PER_CHARS >= size:
            continue  # long, but structured (a definitions section)
        return StructureCheck(
            "length_outliers",
            False,
            WARNING,
            f"{unit.label} (page {_page(stream, unit.start)}) has {size} characters, "
            f"{size / median:.0f}x the median unit, with little sub-structure",
        )
    return StructureCheck("length_outliers", True, WARNING, f"median unit {median:.0f} characters")


def _cited_units(
    stream: Stream, decoded: Decoded, doc_type: str, numbered: list[Unit]
) -> StructureCheck:
    word = UNIT_WORD.get(doc_type, ("",))[0]
    if word not in {"rule", "regulation"}:
        return StructureCheck("cited_units", True, WARNING, f"not checked for a {doc_type}")
    present = {u.number for u in numbered}
    missing: dict[str, int] = {}
    for unit in decoded.units:
        if unit.unit != "form":
            continue
        for match in _CITED.finditer(stream.text[unit.start : unit.end]):
            if not match.group(0).lower().startswith(word):
                continue
            number = f"{match.group(1)}{match.group(2).upper()}"
            if number not in present and number not in missing:
                missing[number] = _page(stream, unit.start + match.start())
    if missing:
        listed = ", ".join(f"{word} {n} (page {p})" for n, p in missing.items())
        return StructureCheck(
            "cited_units",
            False,
            WARNING,
            f"the forms cite units the document does not have: {listed}",
        )
    return StructureCheck("cited_units", True, WARNING, "every unit the forms cite exists")
