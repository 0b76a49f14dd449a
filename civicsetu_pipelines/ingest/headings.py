"""The heading grammar of a gazette: which rows could open a unit, and what their titles are.

Pure domain code. Nothing here decides: it proposes. For every row it finds what the row could
be -- a numbered heading (``9.``, ``9)``, ``9-(1)``, ``9-A.``, ``9A.``, ``Rule 9``, a number
alone on its line with the title on the next, a bold FAQ question), a chapter heading, an appendix
heading
(``FORM 'A'``, ``ANNEXURE-I``, ``SCHEDULE``, ``[See rule 3]``) or a table-of-contents row -- with
the evidence for it as a score. :mod:`~civicsetu_pipelines.ingest.sequence` then decodes the
numbering as one sequence.

Titles end where the document says they end: ``.—``, ``.-``, ``:``, ``–``, a hyphen right before
``(1)`` (``Display Boards-(1) The promoter ...``), the end of a title line, or a margin note
(the Gazette print of an Act). A title is a title: bounded in length, no ``(1)``, not a sentence
(:func:`title_problem`); a unit without one is untitled, never titled with its first sentence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from civicsetu_pipelines.base import canonicalize
from civicsetu_pipelines.ingest.kinds import unit_words
from civicsetu_pipelines.ingest.sequence import Position

# What the numbered units of each kind of document are called (data/kinds.yaml).
UNIT_WORD = unit_words()
# The longest printed titles seen: 203 characters, 30 words (UP rule 20, "Salary and allowances
# payable ... engaged by the regulatory authority"); 28 words in the Act.
MAX_TITLE_CHARS = 240
MAX_TITLE_WORDS = 32
CREDIBLE_SCORE = 1.5  # a heading's score with some evidence beyond its number
INDENT_POINTS = 40.0  # a heading indented this much beyond the page's body edge is suspect

_CHAPTER = re.compile(r"^CHAPTER\s+([IVXLC]+[A-Z]?|\d+[A-Z]?)\b\.?\s*[-—:]?\s*(.*)$", re.I)
# A numbered heading: "9.", "9)", "9-(1)", "9-", "9-A.", "9A.", "Rule 9". A dash may also stand
# before a sub-rule marker that OCR misread ("6-U)", "7-()"): a letter right before ")" is that
# marker, never an inserted unit's suffix ("6-A." is one); or a speck ("35-. The ...").
_NUMBERED = re.compile(
    r"^(?:(?P<word>(?i:rule|regulation|section|paragraph|para))\s+)?"
    r"(?P<num>\d{1,3})(?:\s?[-–]\s?(?P<s1>[A-Z]{1,2})\b(?!\))|(?P<s2>[A-Z]{1,2})(?![A-Za-z]))?"
    r"(?:\s*(?P<punct>[.)]|[-–—][.,:;'’]?(?=\s*\(|\s|$|\S?\)))|(?=\s)|$)\s*(?P<rest>.*)$"
)
_APPENDIX = re.compile(
    r"^(?P<kind>FORM|Form|ANNEXURE|Annexure|ANNEXURE|APPENDIX|Appendix|SCHEDULE|Schedule"
    r"|THE SCHEDULE|The Schedule|(?:FIRST|SECOND|THIRD|First|Second|Third) SCHEDULE)"
    r"(?:\s*[-—–:]?\s*(?:No\.\s*)?['\"]?(?P<id>[A-Z]{1,2}|\d{1,2}|[IVX]{1,4})['\"]?)?"
    r"\s*[.:]?\s*(?P<rest>.*)$"
)
SEE_RULE = re.compile(r"^\[\s*See\s+(?:rule|rules|section|regulation)s?\s+[^\]]{1,40}\]\s*$", re.I)
_TOC_LEADER = re.compile(r"(?:\.\s*){6,}\s*\d{1,3}\s*$|\.{6,}")
MARKER = re.compile(r"^\(\s*([0-9]{1,3}[A-Z]?|[a-z]{1,2}|[ivxlc]{1,6})\s*\)\s*")
# Where a title ends: ".—" ".-" ":—" ":" (before a capital, a marker or the end), " — ", and a
# dash right before a sub-rule marker ("Display Boards-(1) ...").
_TERMINATOR = re.compile(
    r"\.\s*[-—–]+\s*|:\s*[-—–]+\s*|:\s+(?=[A-Z(\"'“‘])|:\s*$|\s[—–]\s*|\s?[-–—]\s?(?=\(\s*\w{1,4}\s*\))"
)
_BODY_START = re.compile(
    r"^(?:In (?:these|this|the)\b|The |Every |Where |Whenever |If |Subject to |Any |No |"
    r"Notwithstanding |All |Save |Unless |Nothing |When |On |Upon |For the purposes? )"
)
_SENTENCE_WORDS = re.compile(r"\b(?:shall|may be|is hereby|are hereby|means)\b", re.I)
_TWO_SENTENCES = re.compile(r"[a-z]\.\s+[A-Z][a-z]")
_DANGLING = re.compile(r"\b(?:the|of|and|or|to|for|in|by|with|a|an|under|from|on)$", re.I)
_SUB_MARKER = re.compile(r"\(\s*(?:\d{1,3}|[a-zA-Z]{1,2}|[ivxlc]{1,6})\s*\)")
# A dash after a heading's number and its stop, before the text: the heading of a unit whose
# title stands in the margin (or is lost), "2.—The Authority shall ..."; never before prose in
# lower case or a figure ("3. — 25").
_DASH_LEAD = re.compile(r"^[-—–]+\s*(?=[A-Z(\"'“‘\[])")
# A row that starts an item: "(1)", "(a)", "(A)", "i.", "a)": never part of a title.
_ITEM_START = re.compile(r"^(?:\(\s*\w{1,4}\s*\)|[ivxlc]{1,5}\.|[a-zA-Z]\))\s")
# Rules, bullets and OCR specks before a heading's number ("| 4.", "- | 2-(1)", "• 3.",
# '"" 29-(1)', ". 2-(1)"), and
# the bracket of an amended unit with its footnote number ("1[16. Undue influence ...").
_RULES = r"\-|•*·_~=»«"  # rules and bullets printed before a heading
_SPECK = _RULES + r".,'\"“”‘’"  # and what OCR makes of specks of dirt
_SPECKS = re.compile(rf"^[{_SPECK}]+\s*(?=[A-Za-z\[])")  # "- FORM A"
_LEADING_JUNK = re.compile(rf"^[\s{_RULES}]*(?:\d{{1,2}}\s*)?\[\s*(?=\d)|^[\s{_SPECK}]+(?=\d)")
WRAPPED_SHARE = 0.85  # a row this close to the page's full line length runs on to the next


MarginNotes = Mapping[int, Sequence[Mapping[str, Any]]]  # page -> its margin notes


class Row(Protocol):
    """What the grammar needs of a row of body text."""

    start: int
    end: int
    page: int
    y0: float
    x0: float
    bold: bool
    text: str


@dataclass
class Heading:
    """A row that could open a numbered unit, with the evidence for it."""

    row: int  # index of the heading's first row
    position: Position
    title: str
    body_start: int  # stream offset where the unit's text after its heading begins
    consumed: int  # rows the heading takes (number, title rows)
    score: float
    flags: list[str] = field(default_factory=list)
    style: str = ""  # how the number is written: "N.", "N)", "N-(", "Rule N", "N" (alone) ...

    @property
    def number(self) -> str:
        return self.position.label


@dataclass
class Appendix:
    """A heading row of a form, annexure, schedule or appendix."""

    row: int
    kind: str  # Form | Annexure | Schedule | Appendix; "" for an unnamed one ("[See rule 3]")
    ident: str  # "A", "I", "" ... (an unnamed one: its title, title-cased, for its label)
    title: str
    strong: bool  # an appendix heading for sure (a bar the numbered body does not cross)


def title_problem(title: str) -> str | None:
    """Why ``title`` is not a title (``None`` when it is one)."""
    words = title.split()
    if len(title) > MAX_TITLE_CHARS or len(words) > MAX_TITLE_WORDS:
        return f"too long for a title ({len(words)} words, {len(title)} characters)"
    if _SUB_MARKER.search(title):
        return "holds a sub-rule marker such as (1): body text"
    if _TWO_SENTENCES.search(title):
        return "holds more than one sentence"
    if _SENTENCE_WORDS.search(title):
        return "reads as a sentence (shall / may be / means)"
    if words and _DANGLING.search(title):
        return "ends mid-phrase"
    return None


def split_title(rest: str) -> tuple[str, str, bool]:
    """Split ``Title.— body`` into (title, body, terminated)."""
    match = _TERMINATOR.search(rest)
    if match and match.start() > 2:
        return rest[: match.start()].strip(), rest[match.end() :], True
    return rest.strip(), "", False


def starts_body(rest: str) -> bool:
    """Whether the text after a number is already the unit's body (no title)."""
    return bool(MARKER.match(rest)) or bool(_BODY_START.match(rest))


def clean_title(title: str) -> str:
    return title.rstrip(" .:-—–").strip()


def is_chapter(text: str) -> re.Match[str] | None:
    match = _CHAPTER.match(text)
    return match if match and len(text) < 120 else None


def is_toc_row(text: str) -> bool:
    """A table-of-contents row: dotted leaders (``Definitions ........ 3``)."""
    return bool(_TOC_LEADER.search(text))


_CONTENTS = re.compile(
    r"^(?:ARRANGEMENT\s+OF\s+(?:SECTIONS|RULES|REGULATIONS|CLAUSES|PARAGRAPHS)"
    r"|(?:TABLE\s+OF\s+)?CONTENTS|INDEX)\.?$",
    re.I,
)
_FIRST = re.compile(r"^(?:(?i:rule|regulation|section)\s+)?1\s*[.)]")


def contents_rows(rows: Sequence[Row]) -> set[int]:
    """The rows of a table of contents that lists the units without dotted leaders
    ("ARRANGEMENT OF SECTIONS" then "1. Short title." "2. ..."): from its heading to the row
    where the numbering starts over ("1." again, the first unit itself)."""
    for c, row in enumerate(rows):
        if not _CONTENTS.match(row.text.strip()):
            continue
        firsts = [i for i in range(c + 1, len(rows)) if _FIRST.match(rows[i].text.strip())]
        if len(firsts) >= 2:
            return set(range(c, firsts[1]))
    return set()


def next_words(rows: Sequence[Row], i: int) -> int | None:
    """The first row after row ``i`` with words in it (a scan's specks, "Ne" or a stray quote
    beside a heading, are skipped), or None."""
    for j in range(i + 1, min(len(rows), i + 4)):
        if len(re.sub(r"[^A-Za-z0-9]", "", rows[j].text)) >= 3:
            return j
    return None


def appendix_at(rows: Sequence[Row], i: int) -> Appendix | None:
    """The appendix heading at row ``i``, if it is one; an unnamed appendix is "[See rule 3]"
    above its title in capitals (kind ``""``, the title-cased title for its label)."""
    text = _SPECKS.sub("", rows[i].text.strip())
    below_at = next_words(rows, i)
    if SEE_RULE.match(text) and below_at is not None:
        below = rows[below_at].text.strip()
        if below.isupper() and len(below) <= 90:
            return Appendix(i, "", canonicalize(below).title(), text, True)
    match = _APPENDIX.match(text)
    if not match or len(text) > 90:
        return None
    kind = match.group("kind").split()[-1].capitalize()
    ident = match.group("id") or ""
    title = match.group("rest").strip()
    if not title and below_at is not None and len(rows[below_at].text) < 120:
        title = rows[below_at].text.strip()
        after = next_words(rows, below_at)
        if SEE_RULE.match(title) and after is not None and len(rows[after].text) < 120:
            # "FORM 'A'" / "[See rule 3(2)]" / "APPLICATION FOR REGISTRATION OF PROJECT"
            title = f"{rows[after].text.strip()} {title}"
    elif SEE_RULE.match(title) and below_at is not None and len(rows[below_at].text) < 120:
        title = f"{rows[below_at].text.strip()} {title}"
    return Appendix(i, kind, ident, title, _is_appendix(match))


def _is_appendix(match: re.Match[str]) -> bool:
    """A heading row of a form, annexure or schedule, not a mention of one in prose."""
    kind = match.group("kind")
    rest = match.group("rest").strip()
    if not kind.isupper() and re.search(r"[.:;,]\s*$", match.group(0)) and not rest:
        return False  # "... in" / "Form D:" at a line start is a wrapped sentence, not a heading
    if not rest or re.match(r"^\[\s*See\b", rest, re.I):
        return True
    if not kind.isupper():
        return False  # "Schedule C (Payment Plan)." inside an agreement is prose
    letters = re.sub(r"[^A-Za-z]", "", rest)
    return bool(letters) and (letters.isupper() or rest[:1] in "-—–")


def body_edges(rows: Sequence[Row]) -> dict[int, float]:
    """Per page, where most body rows start (the median of row starts): a heading indented well
    beyond it is a quotation or a list item; a margin column on the left does not move it."""
    by_page: dict[int, list[float]] = {}
    for row in rows:
        by_page.setdefault(row.page, []).append(row.x0)
    return {page: sorted(xs)[len(xs) // 2] for page, xs in by_page.items()}


def line_lengths(rows: Sequence[Row]) -> dict[int, float]:
    """Per page, the length of a full line (the 90th percentile of row lengths in characters)."""
    by_page: dict[int, list[int]] = {}
    for row in rows:
        by_page.setdefault(row.page, []).append(len(row.text))
    return {page: sorted(n)[(len(n) * 9) // 10] for page, n in by_page.items()}


def numbered_heading(
    rows: Sequence[Row],
    i: int,
    *,
    paragraphs: bool,
    notes: MarginNotes,
    edge: float,
    wrap_chars: float = 1e9,
    margin_first: bool = True,
) -> Heading | None:
    """The numbered heading row ``i`` could be, with its title and score, or ``None``.

    ``paragraphs``: the units are numbered paragraphs (orders, judgments) whose headings carry
    no titles, so a title is no evidence (a quoted section's title must not outrank the
    paragraph around it). ``notes``: the document's margin notes by page; the title note level
    with the row is, with ``margin_first`` (the Gazette print of an Act), the heading's title,
    else its title only when it has none of its own.
    ``edge``: the page's body edge (x); ``wrap_chars``: the length of a full line on the page
    (a heading line that long runs on: body, not a title).
    """
    row = rows[i]
    text = row.text
    match = _NUMBERED.match(_LEADING_JUNK.sub("", text))
    if not match:
        return None
    number = int(match.group("num"))
    suffix = match.group("s1") or match.group("s2") or ""
    word, punct, rest = match.group("word"), match.group("punct"), match.group("rest")
    if punct:  # "2.—The Authority ..." / "2. — (1) ...": its title printed in the margin
        rest = _DASH_LEAD.sub("", rest)
    margin_title = margin_title_for(notes, row)
    if number == 0 or (not word and not punct and rest and not _titled_bare(rest, margin_title)):
        return None  # "9 of the Act" / "12 months" is prose: a heading has "9." or "9)"
    if suffix and not punct and not word:
        return None
    if rest and rest[0].isdigit():
        return None  # "2.5 per cent", "1. 2. 3." in a table
    if rest and not (rest[0].isupper() or rest[0] in "(\"'“‘["):
        return None  # "5. of the Act" is prose, not a heading
    score = 1.0
    flags: list[str] = []
    offset_in_row = len(text) - len(rest)
    position = Position(number, suffix)
    style = f"{(word or '').lower()} N{punct or ''}".strip()
    if word:
        score += 0.5
    if row.bold:
        score += 0.3
    if row.x0 - edge > INDENT_POINTS:
        score -= 0.7  # an indented number: a list item or a quotation, seldom a heading
    if margin_title is not None and margin_first:
        return Heading(i, position, margin_title, row.start + offset_in_row, 1,
                       score + 1.5, flags, style)  # fmt: skip
    if paragraphs:  # a judgment's or order's paragraphs have numbers, not titles
        return Heading(i, position, "", row.start + offset_in_row, 1, score, flags, style)
    title, body_start, consumed, terminated = _title_after(rows, i, rest, offset_in_row,
                                                           wrap_chars)  # fmt: skip
    problem = title_problem(title) if title else "no title"
    if title and problem is None:
        score += 1.0 if terminated or consumed > 1 or not rest else 0.6
    elif margin_title is not None:  # no title inline: the margin note beside the number
        return Heading(i, position, margin_title, row.start + offset_in_row, 1,
                       score + 1.5, flags, style)  # fmt: skip
    else:
        if title:  # a sentence taken for a title: the unit is untitled and starts there
            body_start, consumed = row.start + offset_in_row, 1
        title = ""
        flags.append("untitled")
        if MARKER.match(rest):
            score += 0.5  # "3. (1) The promoter shall ..."
    return Heading(i, position, clean_title(title), body_start, consumed, score, flags, style)


def _titled_bare(rest: str, margin_title: str | None) -> bool:
    """A bare number ("8 Upon the revocation ...", its dash lost to OCR) is a heading when a
    margin title stands level with it and a sentence starts after it."""
    return margin_title is not None and rest[0].isupper()


def _title_after(
    rows: Sequence[Row], i: int, rest: str, offset_in_row: int, wrap_chars: float
) -> tuple[str, int, int, bool]:
    """(title, body_start, rows consumed, terminated) for a heading whose number is on row
    ``i`` with ``rest`` after it."""
    row = rows[i]
    title, body, terminated = split_title(rest)
    if terminated:
        return title, row.start + offset_in_row + (len(rest) - len(body)), 1, True
    if rest and starts_body(rest):
        return "", row.start + offset_in_row, 1, False
    # The title may run onto the next rows until its terminator ("3. Information to be
    # furnished by the" / "promoter.—"), or stand alone on the next row ("1." / "Title").
    joined = rest
    for extra in range(1, 4):
        if i + extra >= len(rows):
            break
        nxt = rows[i + extra]
        if _ITEM_START.match(nxt.text) or _NUMBERED.match(nxt.text) or len(nxt.text) > 160:
            break
        joined = f"{joined} {nxt.text}".strip()
        title, body, terminated = split_title(joined)
        if terminated:
            return title, nxt.end - len(body), extra + 1, True
    if rest:
        if len(row.text) >= WRAPPED_SHARE * wrap_chars and not rest.rstrip().endswith(":"):
            return "", row.start + offset_in_row, 1, False  # a full, wrapped line: body text
        return rest.strip(), row.end, 1, False
    if i + 1 < len(rows) and not MARKER.match(rows[i + 1].text):
        nxt = rows[i + 1]
        if not _NUMBERED.match(nxt.text) and title_problem(clean_title(nxt.text)) is None:
            return nxt.text.strip(), nxt.end, 2, False
    return "", row.end, 1, False


LAID_OUT_QUESTION_SCORE = 1.0  # a question known by its layout alone scores below one with "?"


def question_heading(rows: Sequence[Row], i: int) -> Heading | None:
    """An FAQ question: consecutive bold rows ending in "?", one of them carrying "N.". Or, by
    its layout alone, a question worded without "?" ("3. Registration of projects with
    phases"): a run of at most 5 bold rows that opens with "N." and ends where the plain text
    of its answer begins (it scores lower, so a "?" question wins any conflict)."""
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
    score = 2.0
    if not joined.endswith("?"):
        opens = re.match(r"(\d{1,3})\.\s+\S", joined)
        answered = j < len(rows) and not rows[j].bold  # its answer, on this page or the next
        if not (opens and answered and re.search(r"[a-z]", joined)):
            return None
        score = LAID_OUT_QUESTION_SCORE
    number = re.search(r"(?:^|\s)(\d{1,3})\.(?:\s|$)", joined)
    if not number or int(number.group(1)) == 0:
        return None
    title = canonicalize(joined[: number.start()] + " " + joined[number.end() :])
    return Heading(first, Position(int(number.group(1))), title, rows[j - 1].end, j - first, score)


def margin_title_for(notes: MarginNotes, row: Row) -> str | None:
    """The title margin note level with ``row`` (within 14 pt), if any."""
    best: tuple[float, Mapping[str, Any]] | None = None
    for note in notes.get(row.page, []):
        if note.get("kind") != "title":
            continue
        distance = abs(float(note["y0"]) - row.y0)
        if distance <= 14 and (best is None or distance < best[0]):
            best = (distance, note)
    return None if best is None else str(best[1]["text"]).rstrip(" .").strip()
