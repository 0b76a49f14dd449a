"""Amending instruments read deterministically, and the points in time they make. Pure domain
code (no Dagster, no database).

An amending notification speaks in a few fixed formulae of Indian legislative drafting:

* ``for sub-rule (2), the following sub-rule shall be substituted, namely:- "(2) ..."``
* ``for the words "forty-five days", the words "thirty days" shall be substituted``
* ``after rule 5, the following rule shall be inserted, namely:- "5A. ..."``
* ``sub-rule (3) shall be omitted`` / ``the words "..." shall be omitted``
* ``clause (c) shall be renumbered as clause (d)``

each under the address its paragraph or item gives ("In rule 18 of the said rules,- (a) in
sub-rule (1), ..."). :func:`read_instructions` reads them, each with its own words and page as
evidence; a paragraph that speaks of amending but matches no formula is a problem, named with its
words, never guessed. :func:`apply_amendments` applies them to the chunk rows of the document
they amend: every changed row ends on the amendment's date (``in_force_to``) and a new point in
time of the unit (its own chunk id, ``in_force_from`` the date, ``amendment`` the evidence)
carries the amended text. An instruction whose unit cannot be found with certainty (absent, or
its number printed twice) is a problem too, and changes nothing. A repeal ends every unit.
"""

from __future__ import annotations

import calendar
import copy
import datetime as dt
import functools
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from civicsetu_pipelines.base import SetAside, contained
from civicsetu_pipelines.ingest.legal_structure import NAMESPACE

# ---------------------------------------------------------------------------------------------
# Addresses: "clause (a) of sub-rule (2) of rule 18", "rule 18, in sub-rule (2)"

TOP_WORDS = ("rule", "regulation", "section", "paragraph")
SUB_WORDS = ("sub-rule", "sub-regulation", "sub-section", "sub-paragraph")
_LEVEL_WORDS = ("sub-clause", "clause", "item")
_WORD = r"(?:sub-?(?:rule|regulation|section|paragraph|clause)|rule|regulation|section|" \
        r"paragraph|clause|item)s?"  # fmt: skip
_NUM = r"\(?\s*[0-9]{1,3}[A-Z]{0,2}\s*\)?|\(\s*[a-z]{1,2}[A-Z]?\s*\)|\(\s*[ivxlc]{1,6}\s*\)"
_ONE = rf"{_WORD}\s*(?:{_NUM})"
_THE_SAID = r"the\s+(?:said|principal)\s+\w+"  # "the said rules", "the principal regulations"
ADDRESS = rf"{_ONE}(?:\s*,?\s*(?:of|in)\s+(?:{_THE_SAID}\s*,?\s*)?{_ONE})*"
_ONE_RE = re.compile(rf"(?P<word>{_WORD})\s*(?P<num>{_NUM})", re.IGNORECASE)


@dataclass(frozen=True)
class Address:
    """A unit of a document: its top-level number and the path below it (("2", "a") for
    clause (a) of sub-rule (2))."""

    unit: str | None  # "rule", "regulation" ... (None: the paragraph's own unit)
    number: str | None
    path: tuple[str, ...] = ()

    def label(self, default_unit: str = "rule") -> str:
        word = (self.unit or default_unit).capitalize()
        return f"{word} {self.number}" + "".join(f"({p})" for p in self.path)

    def under(self, outer: Address | None) -> Address:
        """This address read inside ``outer`` (the paragraph's or the item's)."""
        if outer is None or self.number is not None:
            return self
        return Address(outer.unit, outer.number, outer.path + self.path)


def _num(raw: str) -> str:
    return raw.strip().strip("()").strip()


def read_address(text: str) -> Address | None:
    """The address of ``text`` ("clause (a) of sub-rule (2) of rule 18"), innermost first or
    outermost first ("rule 18, in sub-rule (2)")."""
    parts = [(m.group("word").lower().rstrip("s").replace("subr", "sub-r"), _num(m.group("num")))
             for m in _ONE_RE.finditer(text)]  # fmt: skip
    if not parts:
        return None
    top = [(w, n) for w, n in parts if w in TOP_WORDS]
    subs = [(w, n) for w, n in parts if w not in TOP_WORDS]

    def depth(word: str) -> int:
        return 0 if word in SUB_WORDS else 1 + _LEVEL_WORDS[::-1].index(word) \
            if word in _LEVEL_WORDS else 9  # fmt: skip

    subs.sort(key=lambda wn: depth(wn[0]))
    unit, number = top[0] if top else (None, None)
    return Address(unit, number, tuple(n for _, n in subs))


# ---------------------------------------------------------------------------------------------
# Instructions


@dataclass(frozen=True)
class Instruction:
    """One thing an amending instrument does to one unit, with its own words as evidence."""

    kind: str  # substitute | substitute_words | insert | omit | omit_words | renumber
    target: Address
    words: str  # the instruction as printed (flattened)
    page: int
    new_text: str | None = None  # substitute, insert
    old_words: str | None = None  # substitute_words, omit_words
    new_words: str | None = None  # substitute_words
    position: str | None = None  # insert: "after" | "before"
    renumbered: Address | None = None


@dataclass
class AmendingText:
    instructions: list[Instruction]
    problems: list[str]  # paragraphs that speak of amending but match no formula
    in_force_on: dt.date | None  # the instrument's own "shall come into force on ..."


_Q = "\"\u201c\u201d\u2018\u2019'`"
_QUOTED = rf"[{_Q}]\s*(?P<{{name}}>[^{_Q}]+?)\s*[{_Q}]"
_SAID = rf"(?:\s+of\s+{_THE_SAID})?"
_NAMELY = r"(?:,?\s*namely\s*)?[:.\-\u2013\u2014,;]*\s*"
_FORMULAE = [
    ("substitute_words", re.compile(
        rf"for\s+the\s+(?:words?|figures?|letters?|brackets?|expression)(?:\s+and\s+\w+)?\s*,?\s*"
        rf"{_QUOTED.format(name='old')}\s*,?\s*the\s+(?:words?|figures?|letters?|brackets?|"
        rf"expression)(?:\s+and\s+\w+)?\s*,?\s*{_QUOTED.format(name='new')}\s*,?\s*shall\s+be"
        r"\s+substituted", re.I)),
    ("omit_words", re.compile(
        rf"the\s+(?:words?|figures?|letters?|expression)(?:\s+and\s+\w+)?\s*,?\s*"
        rf"{_QUOTED.format(name='old')}\s*,?\s*(?:occurring\s+[^,]{{0,80}},?\s*)?shall\s+be\s+"
        r"omitted", re.I)),
    ("substitute", re.compile(
        rf"for\s+(?P<addr>{ADDRESS}){_SAID}\s*,?\s*the\s+following(?:\s+[\w\s-]{{1,40}}?)?\s+shall\s+be\s+"
        rf"substituted{_NAMELY}(?P<new>.+)", re.I | re.S)),
    ("insert", re.compile(
        rf"(?P<pos>after|before)\s+(?P<addr>{ADDRESS}){_SAID}\s*,?\s*the\s+following(?:\s+[\w\s-]{{1,40}}?)?"
        rf"\s+shall\s+be\s+inserted{_NAMELY}(?P<new>.+)", re.I | re.S)),
    ("renumber", re.compile(
        rf"(?P<addr>{ADDRESS}){_SAID}\s*shall\s+be\s+re-?numbered\s+as\s+"
        rf"(?P<to>{ADDRESS})", re.I)),
    ("omit", re.compile(
        rf"(?P<addr>{ADDRESS}){_SAID}\s*shall\s+be\s+omitted", re.I)),
]  # fmt: skip
# a paragraph or lettered item that amends: "2. In rule 18 of the said rules, ..." / "(a) in ..."
_PARAGRAPH = re.compile(r"(?:^|\n)\s*(?P<n>\d{1,3})\s*\.\s+", re.M)
_ITEM = re.compile(
    r"(?:^|\n|[:\-\u2013\u2014]\s)\s*\((?P<n>[a-zA-Z]{1,2}|[ivx]{1,5})\)\s+(?=[a-z])"
)
_SPEAKS = re.compile(r"shall\s+be\s+(?:substituted|inserted|omitted|re-?numbered)", re.I)
# a piece that names one of the verbs is an instruction: read, or reported (never skipped)
_VERB = re.compile(r"\b(?:substituted|inserted|omitted|re-?numbered)\b", re.I)
_CONTEXT = re.compile(rf"^\s*(?:in|to)\s+(?P<addr>{ADDRESS})", re.I)
_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_FORCE = re.compile(
    r"come\s+into\s+force\s+(?:with\s+effect\s+from|on|from)\s+(?:the\s+)?(?:(?P<d>\d{1,2})"
    r"(?:st|nd|rd|th)?\s+(?:day\s+of\s+)?(?P<m>[A-Za-z]+),?\s+(?P<y>\d{4})|(?P<dd>\d{1,2})"
    r"[./-](?P<mm>\d{1,2})[./-](?P<yy>\d{4}))",
    re.I,
)


def _flat(text: str) -> str:
    return " ".join(text.split())


def in_force_on(text: str) -> dt.date | None:
    """The date an instrument says it comes into force on, when it names one."""
    m = _FORCE.search(text)
    if not m:
        return None
    try:
        if m.group("dd"):
            return dt.date(int(m.group("yy")), int(m.group("mm")), int(m.group("dd")))
        month = _MONTHS.get(m.group("m").lower())
        return dt.date(int(m.group("y")), month, int(m.group("d"))) if month else None
    except ValueError:
        return None


_SIGNED = re.compile(r"\n\s*(?:By\s+order|By\s+command|\[?\s*F\.?\s*No\b)", re.I)


def _new_text(raw: str) -> str:
    """The quoted new text of a substitution or insertion: inside its quotes when it is quoted
    (up to the quote that closes a line), the text's own lines kept; unquoted, up to the
    notification's signature ("By order of the Governor")."""
    text = raw.strip()
    if text[:1] and text[0] in _Q:
        close = _CLOSE_QUOTE.search(text, 1)
        return (text[1 : close.start()] if close else text[1:]).strip()
    signed = _SIGNED.search(text)
    return (text[: signed.start()] if signed else text).strip()


_OPEN_QUOTE = re.compile(rf"namely\s*[:.\-\u2013\u2014,]*\s*(?=[{_Q}])", re.I)
_CLOSE_QUOTE = re.compile(rf"[{_Q}]\s*[.;,]?\s*(?:and\s*)?(?=\n|$)")


def _quoted(text: str) -> list[tuple[int, int]]:
    """Where new text is quoted ("namely:- “(2) ...”;"): a number or item inside is the new
    text's own, not the instrument's."""
    regions = []
    for m in _OPEN_QUOTE.finditer(text):
        close = _CLOSE_QUOTE.search(text, m.end() + 1)
        regions.append((m.end(), close.end() if close else len(text)))
    return regions


def _outside(position: int, regions: Sequence[tuple[int, int]]) -> bool:
    return not any(a < position < b for a, b in regions)


# A legal word print broke at a line's end: "sub- rule", "sub-\nsection", "clau- se". Mended
# before instructions are read: "sub-" joins the unit word after it (its hyphen kept); another
# word broken by a hyphen is joined only when what it makes is a word instructions use.
_BROKEN_SUB = re.compile(r"\b(sub)[ \t]*-[ \t]*\n?[ \t]*(?=(?:rule|regulation|section|paragraph|"
                         r"clause)s?\b)", re.I)  # fmt: skip
_BROKEN_WORD = re.compile(r"\b([A-Za-z]{2,})-[ \t]*\n?[ \t]*([a-z]+)\b")
INSTRUCTION_WORDS = frozenset({
    "rule", "rules", "regulation", "regulations", "section", "sections", "paragraph", "clause",
    "clauses", "proviso", "explanation", "schedule", "annexure", "substituted", "inserted",
    "omitted", "renumbered", "following", "figures", "figure", "words", "expression", "namely",
    "principal", "hereinafter", "notification", "amendment",
})  # fmt: skip


def mend_line_breaks(text: str) -> str:
    """``text`` with the legal words print broke across a line (or around a stray space) whole
    again (see :data:`INSTRUCTION_WORDS`); every other hyphen as printed."""
    text = _BROKEN_SUB.sub(lambda m: f"{m.group(1)}-", text)
    return _BROKEN_WORD.sub(
        lambda m: (
            m.group(1) + m.group(2)
            if (m.group(1) + m.group(2)).lower() in INSTRUCTION_WORDS
            else m.group(0)
        ),
        text,
    )


def read_instructions(pages: Sequence[tuple[int, str]]) -> AmendingText:
    """The instructions of an amending instrument's pages ((page number, text) in order), the
    legal words print broke across lines mended first (:func:`mend_line_breaks`)."""
    text, starts = "", []
    for number, page_text in pages:
        starts.append((len(text), number))
        text += mend_line_breaks(page_text.rstrip()) + "\n"

    def page_at(offset: int) -> int:
        return max((p for s, p in starts if s <= offset), default=pages[0][0] if pages else 1)

    quoted = _quoted(text)
    instructions: list[Instruction] = []
    problems: list[str] = []
    start, end = operative_span(text, quoted)
    # the instrument's paragraphs run 1, 2, 3 ...: a number out of that run opens the new text
    # of an unquoted substitution ("16. Timelines for refund ..."), not a paragraph
    bounds: list[int] = []
    last: int | None = None
    for m in _PARAGRAPH.finditer(text, start, end):
        n = int(m.group("n"))
        if _outside(m.start(), quoted) and (last is None or n == last + 1):
            bounds.append(m.start())
            last = n
    # an instruction not in a numbered paragraph (a G.O.'s one "In sub-rule (2) of rule 18, for
    # ..."): the operative text before the first paragraph is a paragraph of its own
    if not bounds or _VERB.search(text, start, bounds[0]):
        verb = _VERB.search(text, start)
        enacting = [m.end() for m in _ENACTING.finditer(text, start, verb.start() if verb else end)
                    if _outside(m.start(), quoted)]  # fmt: skip
        bounds.insert(0, enacting[-1] if enacting else start)
    for a, b in zip(bounds, [*bounds[1:], end], strict=True):
        paragraph = text[a:b]
        if not _VERB.search(paragraph):
            continue
        head = _PARAGRAPH.match(paragraph)
        at = a + (head.end() if head else 0)
        body = text[at:b]
        context_match = _CONTEXT.match(body)
        outer = read_address(context_match.group("addr")) if context_match else None
        after = context_match.end() if context_match else 0
        items = [m for m in _ITEM.finditer(body)
                 if m.start() >= after and _outside(at + m.start(), quoted)]  # fmt: skip
        pieces = ([(body[m.end() : n.start() if n else len(body)], m.end())
                   for m, n in zip(items, [*items[1:], None], strict=True)]
                  if items else [(body, 0)])  # fmt: skip
        carry = outer  # an item that only gives an address ("in section 84,-") carries it on
        for piece, offset in pieces:
            if not _VERB.search(piece):
                local = _CONTEXT.match(piece)
                address = read_address(local.group("addr")) if local else None
                carry = address.under(outer) if address is not None else carry
                continue
            found = _read_piece(piece, carry, page_at(at + offset))
            if found is None:
                problems.append(_flat(piece)[:300])
            else:
                instructions.extend(found)
    return AmendingText(instructions, problems, in_force_on(text))


# The framing of a government order (G.O.) or notification around its operative text: the
# abstract, "Read the following:" and its list of papers, the headings ORDER / NOTIFICATION /
# AMENDMENT(S), and after the instructions the signature ("By order and in the name of the
# Governor", "By command of ...") and the "To" / "Copy to" lists. Headings are lines of their
# own; only the last heading before the first instruction opens the operative text.
_FRAME_HEADING = re.compile(
    r"^[ \t]*(?:ABSTRACT|READ[ \t]+THE[ \t]+FOLLOWING|READ|ORDERS?|NOTIFICATIONS?|"
    r"AMENDMENTS?|CORRIGENDUM|G\.?[ \t]*O\.?[ \t]*\(?\w{1,4}\)?\.?[ \t]*No\.?[^\n]{0,60})"
    r"[ \t]*[:.\-\u2013\u2014]*[ \t]*$",
    re.I | re.M,
)
_FRAME_END = re.compile(
    r"(?:^|\n)[ \t(\[]*(?:By[ \t]+(?:the[ \t]+)?(?:order|command)\b|Copy[ \t]+to\b|"
    r"Copy[ \t]+forwarded\b|To[ \t]*[,:]?[ \t]*\n)",
    re.I,
)


# The enacting formula that opens an instrument's instructions: "... makes the following rules
# further to amend the X Rules, 2017, namely:-", "... hereby makes the following amendment to ..."
_ENACTING = re.compile(
    r"\bnamely\s*[:.\-\u2013\u2014]+|\bmakes?\s+the\s+following\s+(?:rules|amendments?)\b"
    r"[^.\n]*(?:\n[^.\n]*){0,3}\.(?=\s)",
    re.I,
)


def operative_span(text: str, quoted: Sequence[tuple[int, int]] = ()) -> tuple[int, int]:
    """Where an instrument's operative text lies in ``text``: after the last framing heading
    (ORDER, NOTIFICATION, AMENDMENT, "Read the following" ...) before its first instruction,
    and up to its signature or distribution list after the first instruction. The whole text
    when there is no framing."""
    first = next((m.start() for m in _VERB.finditer(text) if _outside(m.start(), quoted)), None)
    if first is None:
        return 0, len(text)
    start = 0
    for m in _FRAME_HEADING.finditer(text, 0, first):
        if _outside(m.start(), quoted):
            start = m.end()
    end = next((m.start() for m in _FRAME_END.finditer(text, first)
                if _outside(m.start(), quoted)), len(text))  # fmt: skip
    return start, end


_IN = re.compile(rf"\b(?:in|to)\s+(?P<addr>{ADDRESS})", re.I)


_LIST = re.compile(
    rf"(?P<word>{_WORD})\s*(?P<items>\(\s*\w{{1,4}}\s*\)(?:\s*,\s*\(\s*\w{{1,4}}\s*\))*"
    r"\s*and\s*\(\s*\w{1,4}\s*\))\s*shall\s+be\s+omitted",
    re.I,
)  # "clauses (a), (b) and (g) shall be omitted": one omission per item


def _here(piece: str, end: int, outer: Address | None) -> Address | None:
    """The address a piece gives before ``end``: "In rule 16 ..., in sub-rule (1), for ..."."""
    here = outer
    for near in _IN.finditer(piece, 0, end):
        found = read_address(near.group("addr"))
        if found is not None:
            here = found.under(here) if found.number is None else found
    if here is not None and outer is not None and here.number is None:
        here = here.under(outer)
    return here


def _read_piece(piece: str, outer: Address | None, page: int) -> list[Instruction] | None:
    """Every instruction of a piece, in order (a piece may hold several: "(A) for clause (a)
    ... (B) after clause (o) ..."); None when one of its formulae cannot be read whole."""
    words = _flat(piece)
    found: list[Instruction] = []
    at = 0
    while True:
        hits = [(m.start(), order, kind, m) for order, (kind, pattern) in enumerate(_FORMULAE)
                if (m := pattern.search(piece, at))]  # fmt: skip
        listed = _LIST.search(piece, at)
        if listed and (not hits or listed.start() <= min(hits)[0]):
            here = _here(piece, listed.start(), outer)
            word = listed.group("word").lower().rstrip("s")
            for item in re.findall(r"\(\s*(\w{1,4})\s*\)", listed.group("items")):
                target = read_address(f"{word} ({item})")
                if target is None or here is None:
                    return None
                found.append(Instruction("omit", target.under(here), words, page))
            at = listed.end()
            continue
        if not hits:
            break
        _, _, kind, m = min(hits, key=lambda h: (h[0], h[1]))
        here = _here(piece, m.start(), outer)
        at = m.end()
        if kind in ("substitute_words", "omit_words"):
            if here is None or here.number is None:
                return None
            found.append(Instruction(kind, here, words, page, old_words=_flat(m.group("old")),
                                     new_words=_flat(m.group("new")) if kind ==
                                     "substitute_words" else None))  # fmt: skip
            continue
        addr = read_address(m.group("addr"))
        target = addr.under(here) if addr is not None else None
        if target is None or target.number is None:
            return None
        if kind == "renumber":
            to = read_address(m.group("to"))
            found.append(Instruction(kind, target, words, page,
                                     renumbered=to.under(here) if to else None))  # fmt: skip
            continue
        if kind == "omit":
            found.append(Instruction(kind, target, words, page))
            continue
        raw = m.group("new")
        new_text = _new_text(raw)
        if not new_text.strip(" .,;:-\u2013\u2014"):
            return None  # "namely:-" and nothing after it
        close = _CLOSE_QUOTE.search(raw, 1) if raw.lstrip()[:1] in _Q else None
        at = m.start("new") + close.end() if close else len(piece)
        position = m.group("pos").lower() if kind == "insert" else None
        found.append(Instruction(kind, target, words, page, new_text=new_text,
                                 position=position))  # fmt: skip
    return found or None


# ---------------------------------------------------------------------------------------------
# Applying instructions to a document's chunk rows


@dataclass
class Applied:
    """The chunk rows after an instrument, and what it did (each instruction applied, with the
    row it made or ended, and each one it could not apply, by name)."""

    rows: list[dict[str, Any]]
    done: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _marker(token: str) -> re.Pattern[str]:
    """Where sub-unit ``(token)`` opens: at a line start or after a heading's ".-" / ":-"."""
    return re.compile(rf"(?:\A|(?<=\n)|(?<=[.:;\-\u2013\u2014])|(?<=[.:;\-\u2013\u2014]\s))"
                      rf"[ \t]*(?P<open>\(\s*{re.escape(token)}\s*\))\s")  # fmt: skip


def _next_token(token: str) -> str | None:
    if token.isdigit():
        return str(int(token) + 1)
    if re.fullmatch(r"[a-z]", token):
        return chr(ord(token) + 1)
    return None


def _row_path(row: dict[str, Any]) -> tuple[str, ...]:
    """Where a chunk sits below its top-level unit: its legal path's parts ("84(2)(m)" ->
    ("2", "m")), the last dropped for a chunk of several ("Section 84(2)(m)-(q)" -> ("2",))."""
    parts = tuple(re.findall(r"\(([^)]+)\)", str(row.get("legal_path") or "")))
    return parts[:-1] if parts and "-(" in str(row.get("label") or "") else parts


def _span(text: str, path: Sequence[str]) -> tuple[int, int] | None:
    """Where the sub-unit at ``path`` runs in ``text`` (a top-level unit's text): None when a
    marker is absent or printed twice (no certainty)."""
    start, end = 0, len(text)
    for token in path:
        hits = list(_marker(token).finditer(text, start, end))
        if len(hits) != 1:
            return None
        open_at = hits[0].start("open")
        sibling = _next_token(token)
        close = _marker(sibling).search(text, open_at + 1, end) if sibling else None
        start, end = open_at, close.start() if close else end
    return start, end


def _point_in_time(row: dict[str, Any], key: str, date: dt.date, text: str,
                   evidence: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    new = copy.deepcopy(row)
    new["chunk_id"] = str(uuid.uuid5(NAMESPACE, f"{row['chunk_id']}@{key}"))
    new["text"] = text
    new["in_force_from"] = date
    new["in_force_to"] = None
    new["amendment"] = {**evidence, "previous": row["chunk_id"]}
    return new


def apply_amendments(
    rows: Sequence[dict[str, Any]],
    instructions: Sequence[Instruction],
    *,
    by: str,
    date: dt.date,
    source: dict[str, Any] | None = None,
) -> Applied:
    """``rows`` (one document's chunk rows, each point in time) after the instrument ``by``
    applies ``instructions`` from ``date``; ``source`` (the instrument's title) is kept
    in each new row's evidence."""
    out = [dict(r) for r in rows]
    applied = Applied(out)

    def live(r: dict[str, Any]) -> bool:
        return r.get("in_force_to") is None or r["in_force_to"] > date

    for n, ins in enumerate(instructions, start=1):
        evidence = {"by": by, "kind": ins.kind, "instruction": ins.words, "page": ins.page,
                    "date": date.isoformat(), **(source or {})}  # fmt: skip
        unit = [r for r in out if live(r) and str(r.get("number")) == ins.target.number
                and ins.target.unit in (None, r.get("unit"))]  # fmt: skip
        unit.sort(key=lambda r: r["ordinal"])
        label = ins.target.label(str(unit[0]["unit"]) if unit else "rule")
        if not unit:
            applied.problems.append(f"{by}: {ins.kind} of {label}: no such unit in force on "
                                    f"{date} (\"{ins.words[:160]}\")")  # fmt: skip
            continue
        made = _apply_one(out, unit, ins, by, date, evidence, n)
        if isinstance(made, str):
            applied.problems.append(f'{by}: {ins.kind} of {label}: {made} ("{ins.words[:160]}")')
            continue
        for row in out:  # the units below a unit's new point in time hang from it
            previous = (row.get("amendment") or {}).get("previous")
            if row["chunk_id"] in made and previous:
                for child in out:
                    if child.get("parent_id") == previous and live(child):
                        child["parent_id"] = row["chunk_id"]
        applied.done.append({"label": label, "kind": ins.kind, "page": ins.page,
                             "instruction": ins.words, "chunks": made})  # fmt: skip
    return applied


_TITLE = re.compile(r"\s*\d{1,3}[A-Z]{0,2}\s*\.\s*(?P<title>[^.\n]{3,150}?)\s*[.:][\-\u2013\u2014]")


def _end(row: dict[str, Any], date: dt.date, flag: str | None = None) -> None:
    """``row`` ends on ``date``; ``flag`` ("ended_by:<key>", "repealed_by:<key>") names what
    ended it in its flags (the graph's AMENDED_BY / REPEALED_BY read it)."""
    row["in_force_to"] = date
    if flag:
        flags = row.get("flags") or []
        listed = json.loads(flags) if isinstance(flags, str) else list(flags)
        if flag not in listed:
            listed.append(flag)
        row["flags"] = json.dumps(listed) if isinstance(flags, str) else listed


def _apply_one(
    out: list[dict[str, Any]],
    unit: list[dict[str, Any]],
    ins: Instruction,
    by: str,
    date: dt.date,
    evidence: dict[str, Any],
    n: int,
) -> list[str] | str:
    """Apply one instruction to a unit's live rows in ``out``; the chunk ids it made or ended,
    or why it cannot be applied with certainty."""
    path = ins.target.path
    ended = f"ended_by:{by}"
    if not path and ins.kind == "omit":
        for row in unit:
            _end(row, date, ended)
        return [r["chunk_id"] for r in unit]
    if not path and ins.kind in ("substitute", "insert") and ins.new_text:
        if ins.kind == "insert":
            number = re.match(r"\s*(\d{1,3}[A-Z]{0,2})\s*[.\-]", ins.new_text)
            if not number:
                return "the inserted unit's number is not printed"
            anchor = unit[-1] if ins.position == "after" else unit[0]
            new = _point_in_time(anchor, f"{by}#{n}", date, ins.new_text, evidence)
            title = _TITLE.match(ins.new_text)
            new.update(number=number.group(1), legal_path=number.group(1), parent_id=None,
                       label=f"{str(anchor['unit']).capitalize()} {number.group(1)}",
                       title=title.group("title").strip() if title else None,
                       level=0)  # fmt: skip
            new["section_label"] = new["label"]
            new["amendment"]["previous"] = None
            out.append(new)
            return [new["chunk_id"]]
        first = unit[0]
        new = _point_in_time(first, by, date, ins.new_text, evidence)
        new.update(legal_path=str(first["number"]), label=first["section_label"], parent_id=None,
                   level=0)  # fmt: skip
        for row in unit:
            _end(row, date, ended)
        out.append(new)
        return [new["chunk_id"]]
    if not path and ins.kind == "renumber" and ins.renumbered and ins.renumbered.number:
        made = []
        for row in unit:
            new = _point_in_time(row, by, date, row["text"], evidence)
            old, to = str(row["number"]), ins.renumbered.number
            new.update(number=to, legal_path=str(row["legal_path"]).replace(old, to, 1),
                       label=str(row["label"]).replace(old, to, 1),
                       section_label=str(row["section_label"]).replace(old, to, 1))  # fmt: skip
            _end(row, date, ended)
            out.append(new)
            made.append(new["chunk_id"])
        return made
    # Below the top level, and words: edit the text of the chunk that holds the place.
    holders = []
    for row in unit:
        own = _row_path(row)  # a chunk of a long unit starts below it: "Section 84(2)(m)-(q)"
        if tuple(path[: len(own)]) != own:
            continue
        rest = path[len(own) :]
        where = _span(row["text"], rest) if rest else (0, len(row["text"]))
        if where is not None:
            holders.append((row, where))
    if ins.kind in ("substitute_words", "omit_words"):
        holders = [(r, w) for r, w in holders if _count(r["text"][w[0] : w[1]], ins.old_words)]
        if len(holders) != 1:
            return (f'the words "{ins.old_words}" are not in it' if not holders else
                    f'the words "{ins.old_words}" are in {len(holders)} of its chunks')  # fmt: skip
    elif len(holders) != 1:
        return ("that place is not printed in it" if not holders else
                "that place is printed in more than one of its chunks")  # fmt: skip
    row, (start, end) = holders[0]
    text = row["text"]
    part = text[start:end]
    if ins.kind == "substitute_words":
        part = _replace_words(part, str(ins.old_words), str(ins.new_words))
    elif ins.kind == "omit_words":
        part = _replace_words(part, str(ins.old_words), "")
    elif ins.kind == "substitute" and ins.new_text:
        part = ins.new_text.rstrip() + ("\n" if part.endswith("\n") else "")
    elif ins.kind == "omit":
        part = ""
    elif ins.kind == "insert" and ins.new_text:
        part = (f"{part.rstrip()}\n{ins.new_text}\n" if ins.position == "after"
                else f"{ins.new_text}\n{part}")  # fmt: skip
    elif ins.kind == "renumber" and ins.renumbered and ins.renumbered.path:
        old, to = path[-1], ins.renumbered.path[-1]
        part = re.sub(rf"^\(\s*{re.escape(old)}\s*\)", f"({to})", part, count=1)
    else:
        return "the instruction's form is not one this reader applies"
    edited = text[:start] + part + text[end:]
    if row.get("amendment") and row["amendment"].get("by") == by:
        row["text"] = edited  # a second instruction of the same instrument: the same point
        row["amendment"]["instruction"] += f" | {ins.words}"
        return [row["chunk_id"]]
    new = _point_in_time(row, by, date, edited, evidence)
    _end(row, date, ended)
    out.append(new)
    return [new["chunk_id"]]


def _words_pattern(words: str | None) -> re.Pattern[str]:
    return re.compile(r"\s+".join(re.escape(w) for w in str(words).split()))


def _count(text: str, words: str | None) -> int:
    return len(_words_pattern(words).findall(text))


def _replace_words(text: str, old: str, new: str) -> str:
    replaced = _words_pattern(old).sub(new.replace("\\", r"\\"), text)
    return re.sub(r"[ \t]{2,}", " ", replaced) if not new else replaced


def repeal(rows: Sequence[dict[str, Any]], date: dt.date, by: str) -> list[dict[str, Any]]:
    """Every unit of a repealed instrument ends on ``date`` (repealed by ``by``)."""
    out = [dict(r) for r in rows]
    for row in out:
        if row.get("in_force_to") is None or row["in_force_to"] > date:
            _end(row, date, f"repealed_by:{by}")
    return out


# ---------------------------------------------------------------------------------------------
# A partition's instruments, in the order of their dates

# Kinds whose text is read for amending or repealing words when the registry names none (an Act
# that repeals the Ordinance it replaced is not an instrument of this corpus's)
AMENDING_KINDS = frozenset({"notification", "order", "rules", "regulations", "circular"})
# An instrument names what it amends in its enacting formula: "... further to amend the X Rules,
# 2017" (the title follows), "In the X Rules, 2017 (hereinafter referred to as the said rules)"
# (the title precedes); what it repeals: "the Y Regulations, 2021 are hereby repealed". A
# mention of amending anything else ("it is considered necessary to amend the proviso") names
# nothing.
# Kinds an instrument can amend or repeal (a FAQ or a judgment is not amended by instructions,
# though a FAQ's title may repeat the Act's)
AMENDABLE_KINDS = frozenset({"act", "rules", "regulations", "order", "notification", "circular"})
# "further to amend the X Rules", "the following amendment(s) to (in) the X Rules"
_AMENDS_NEXT = re.compile(r"\bto\s+amend\s+|\bamendments?\s+(?:to|in)\s+", re.I)
_AMENDS_BEFORE = re.compile(r"\(\s*hereinafter\s+referred\s+to\s+as\s+the\s+(?:said|principal)",
                            re.I)  # fmt: skip
_REPEALS = re.compile(r"\b(?:are|is)\s+hereby\s+repealed|\bshall\s+stand\s+repealed", re.I)
NEAR = 300  # characters on the named side of a formula that are read for a title
# words between the formula and the title they name ("to amend the said ...")
_BETWEEN = 3


def _plain(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _short_title(title: str) -> str:
    """A registered title up to its year ("... (General) Rules, 2017"), as plain words."""
    m = re.search(r"^.*?\b(?:1[89]|20)\d\d\b", title)
    return _plain(m.group(0) if m else title)


def amendable_titles(specs: Sequence[Any]) -> dict[str, str]:
    """The titles of the registered documents (``DocumentSpec``) an instrument can amend."""
    return {s.key: s.title for s in specs if str(s.doc_type) in AMENDABLE_KINDS}


def named_documents(text: str, titles: dict[str, str]) -> tuple[list[str], list[str]]:
    """The registered documents ``text`` names as amended and as repealed, by their short
    titles at the place its enacting formula names them (see _AMENDS_NEXT); a title that is a
    longer one's prefix is read as the longer one when both fit."""
    shorts = sorted(((_short_title(t), k) for k, t in titles.items()),
                    key=lambda sk: -len(sk[0]))  # fmt: skip
    shorts = [(short, key) for short, key in shorts if len(short.split()) >= 3]

    def after(m: re.Match[str]) -> str:
        return _plain(text[m.end() : m.end() + NEAR])

    def before(m: re.Match[str]) -> str:
        return _plain(text[max(0, m.start() - NEAR) : m.start()])

    def named(windows: list[tuple[str, str]]) -> list[str]:
        found: list[str] = []
        for side, window in windows:
            words = window.split()
            for short, key in shorts:
                n = len(short.split())
                spans = ([" ".join(words[i : i + n]) for i in range(_BETWEEN + 1)]
                         if side == "after" else
                         [" ".join(words[len(words) - n - i : len(words) - i])
                          for i in range(_BETWEEN + 1)])  # fmt: skip
                if short in spans and key not in found:
                    found.append(key)
                    break
        return found

    amended = named([("after", after(m)) for m in _AMENDS_NEXT.finditer(text)] +
                    [("before", before(m)) for m in _AMENDS_BEFORE.finditer(text)])  # fmt: skip
    repealed = named([("before", before(m)) for m in _REPEALS.finditer(text)])
    return amended, [k for k in repealed if k not in amended]


@dataclass(frozen=True)
class Instrument:
    """An amending or repealing document of a partition: its key, title, date (its
    own "shall come into force on", else the registry's) and what it amends and repeals."""

    key: str
    title: str
    effective_date: dt.date
    pages: tuple[tuple[int, str], ...]
    amends: tuple[str, ...] = ()
    repeals: tuple[str, ...] = ()


@dataclass
class PartitionAmendments:
    rows: list[dict[str, Any]]
    done: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    repealed: list[dict[str, Any]] = field(default_factory=list)
    set_aside: list[SetAside] = field(default_factory=list)  # instruments that raised


def may_be_instrument(kind: str, amends: Sequence[str], repeals: Sequence[str]) -> bool:
    """Whether :func:`instrument_of` reads the document's pages at all: a kind of
    :data:`AMENDING_KINDS`, or a registry entry that says what it amends or repeals."""
    return kind in AMENDING_KINDS or bool(amends) or bool(repeals)


def instrument_of(
    key: str,
    title: str,
    effective_date: dt.date,
    pages: Sequence[tuple[int, str]],
    *,
    kind: str,
    amends: Sequence[str],
    repeals: Sequence[str],
    titles: dict[str, str],
) -> Instrument | None:
    """The document as an instrument: what its registry entry says it amends and repeals, else
    what its own text names ("to amend the X Rules, 2017", "the Y Regulations, 2021 are hereby
    repealed", read in the kinds of AMENDING_KINDS only); None when it does neither."""
    if not may_be_instrument(kind, amends, repeals):
        return None
    text = mend_line_breaks("\n".join(t for _, t in pages))
    others = {k: t for k, t in titles.items() if k != key}
    named_amended, named_repealed = named_documents(text, others)
    amended = tuple(amends) or (tuple(named_amended) if _SPEAKS.search(text) else ())
    repealed = tuple(repeals) or tuple(k for k in named_repealed if k not in amended)
    if not amended and not repealed:
        return None
    date = in_force_on(text) or effective_date
    return Instrument(key, title, date, tuple(pages), amended, repealed)


def amend_partition(
    rows: Sequence[dict[str, Any]], instruments: Sequence[Instrument]
) -> PartitionAmendments:
    """The partition's chunk rows after its instruments, applied in the order of their dates:
    the amended units' points in time, the repealed documents' units ended."""
    result = PartitionAmendments([dict(r) for r in rows])
    present = {str(r["document_key"]) for r in rows}
    for inst in sorted(instruments, key=lambda i: (i.effective_date, i.key)):
        # an instrument that raises changes nothing and is set aside, named with the error
        before = (result.rows, len(result.done), len(result.problems), len(result.repealed))
        step = functools.partial(_apply_instrument, result, inst, present)
        _, aside = contained("amendments", inst.key, step)
        if aside is not None:
            result.rows = before[0]
            del result.done[before[1] :], result.problems[before[2] :]
            del result.repealed[before[3] :]
            result.set_aside.append(aside)
            result.problems.append(f"{inst.key}: set aside, it changes nothing: "
                                   f"{aside.reason()}")  # fmt: skip
    return result


def _apply_instrument(result: PartitionAmendments, inst: Instrument, present: set[str]) -> None:
    """One instrument's instructions and repeals applied to ``result`` (in place)."""
    source = {"title": inst.title}
    if inst.amends:
        target = inst.amends[0]
        if len(inst.amends) > 1:
            result.problems.append(
                f"{inst.key}: names {len(inst.amends)} documents it amends; its "
                f"instructions are applied to {target} only"
            )
        read = read_instructions(inst.pages)
        result.problems += [f'{inst.key}: an instruction not read: "{p}"' for p in read.problems]
        if target not in present:
            result.problems.append(f"{inst.key}: amends {target}, which has no units in "
                                   "this load (not registered here, or set aside)")  # fmt: skip
        elif not read.instructions:
            result.problems.append(f"{inst.key}: amends {target}, but no instruction of "
                                   "its text was read")  # fmt: skip
        else:
            own = [r for r in result.rows if r["document_key"] == target]
            applied = apply_amendments(own, read.instructions, by=inst.key,
                                       date=inst.effective_date, source=source)  # fmt: skip
            rest = [r for r in result.rows if r["document_key"] != target]
            result.rows = rest + applied.rows
            when = inst.effective_date.isoformat()
            result.done += [
                {**d, "by": inst.key, "document": target, "date": when} for d in applied.done
            ]
            result.problems += applied.problems
    for target in inst.repeals:
        if target not in present:
            result.problems.append(f"{inst.key}: repeals {target}, which has no units in "
                                   "this load")  # fmt: skip
            continue
        own = [r for r in result.rows if r["document_key"] == target]
        rest = [r for r in result.rows if r["document_key"] != target]
        result.rows = rest + repeal(own, inst.effective_date, inst.key)
        result.repealed.append({"document": target, "by": inst.key,
                                "date": inst.effective_date.isoformat()})  # fmt: skip
