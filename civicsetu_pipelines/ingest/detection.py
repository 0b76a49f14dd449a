"""What a PDF says of itself: its kind, title, date and what it amends or repeals, each read
from its own words. Pure domain code (no Dagster) behind ``civicsetu documents add``.

The input is a document's parsed pages (``ParsedPage`` as dicts: ``page`` and ``text``, as
``inspect`` and a run parse them). Every field comes with the words and the page it was read
from and a confidence (``high`` or ``low``), or ``not found`` and why: nothing is guessed.

* kind: as ``civicsetu inspect`` reads it (:func:`~.inspection.detect_kind` on the first pages
  with body text); no signal at all is "not found", not "rules".
* title: the short-title clause ("These rules may be called the X Rules, 2017"), a title heading
  ("THE REAL ESTATE (REGULATION AND DEVELOPMENT) ACT, 2016"), a G.O.'s abstract or a "Sub:"
  line (with its number), a notification's number ("S.O. 1216(E)") and the power it is made
  under, or a judgment's parties ("A v. B") and case number, in the order its kind prints them.
* date: the document's own date of issue: a "Dated:" / "DATE :" line ("G.O.Ms.No. 123 Dated:
  28-01-2019"), the place-date line ("Lucknow, 27-10-2016", "New Delhi, the 19th April, 2017"),
  "Pronounced on", else the Act's date of assent or the Gazette's masthead date; never a date
  it cites (the "Read the following:" references, "the impugned order dated ...").
* in force: the commencement it names for itself ("shall come into force on the 1st day of
  April, 2024"), as amendments read it (:func:`~.amendments.in_force_on`).
* amends / repeals: the registered documents its enacting formula names, as a run reads them
  (:func:`~.amendments.instrument_of`): the jurisdiction's own first, else the Union's Acts.
* jurisdiction (:func:`detect_jurisdiction`, for a source that serves several): the authority
  that issues it, as its first page prints it ("GOVERNMENT OF MIZORAM", "THE GAZETTE OF INDIA"),
  else the one state or territory its first pages name as a government, governor, gazette or
  title ("Bihar Real Estate ... Rules"), with low confidence; a name merely mentioned is not
  enough ("except the State of Jammu and Kashmir").
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from civicsetu_pipelines.ingest.amendments import (
    AMENDING_KINDS,
    in_force_on,
    instrument_of,
    named_documents,
)
from civicsetu_pipelines.ingest.inspection import DETECT_PAGES, detect_kind

HIGH = "high"
LOW = "low"
NOT_FOUND = "not found"
DATE_PAGES = 8  # a judgment prints its date after the parties (Neelkamal: page 6)
FOOT_PAGES = 2  # and an order may be dated only at its foot, beside the signature
TITLE_LINES = 40  # a heading is printed near the top of its page

Value = str | dt.date | tuple[str, ...] | None


@dataclass(frozen=True)
class Found:
    """One field read from a document: its value, the words and page it was read from and how
    sure the reading is; or, ``not found``, why not (in ``words``)."""

    name: str  # kind | title | date | in_force | amends | repeals
    value: Value
    words: str
    page: int | None = None
    confidence: str = HIGH

    @property
    def found(self) -> bool:
        return self.confidence != NOT_FOUND

    def why(self) -> str:
        """Where it was read: ``page 3: "These rules may be called ..."`` (or why not found)."""
        if not self.found:
            return self.words
        return f'page {self.page}: "{self.words}"' if self.page is not None else self.words


def _missing(name: str, why: str) -> Found:
    return Found(name, None, why, None, NOT_FOUND)


@dataclass(frozen=True)
class Detection:
    """Every field of a document as its own words give it."""

    kind: Found
    title: Found
    date: Found
    in_force: Found
    amends: Found
    repeals: Found
    jurisdiction: Found | None = None  # read only when not given (a source serving several)

    def fields(self) -> tuple[Found, ...]:
        read = (self.jurisdiction,) if self.jurisdiction is not None else ()
        return (*read, self.kind, self.title, self.date, self.in_force, self.amends,
                self.repeals)  # fmt: skip

    @property
    def effective_from(self) -> Found:
        """The date it takes effect from: the commencement it names, else its date of issue."""
        return self.in_force if self.in_force.found else self.date


def detect_document(
    pages: Sequence[Mapping[str, Any]],
    *,
    titles: Mapping[str, str],
    fallback_titles: Mapping[str, str] | None = None,
    kind: str | None = None,
) -> Detection:
    """Read a document's fields from its parsed ``pages`` (dicts with ``page`` and ``text``).

    ``titles`` are the registered documents it may amend or repeal (key -> title: its
    jurisdiction's), ``fallback_titles`` those read only when it names none of them (the Union's
    Acts). ``kind``, when the user gave it, decides how the title and the instruments are read
    (the detected kind is reported either way).
    """
    text_pages = [p for p in pages if len(_WORDS.findall(_text(p))) >= 3]
    found_kind = _kind(text_pages[:DETECT_PAGES])
    read_as = kind or (str(found_kind.value) if found_kind.found else None)
    amends, repeals = _instruments(pages, read_as, titles, fallback_titles or {})
    return Detection(
        kind=found_kind,
        title=_title(text_pages[:DETECT_PAGES], read_as),
        date=_date(text_pages[:DATE_PAGES], text_pages[DATE_PAGES:][-FOOT_PAGES:]),
        in_force=_in_force(text_pages[:DETECT_PAGES]),
        amends=amends,
        repeals=repeals,
    )


_WORDS = re.compile(r"[A-Za-z]{3,}")  # a page of body text, not a form's rules or a lone mark


# ---------------------------------------------------------------------------------------------
# Jurisdiction: the authority that issues it

ISSUER_LINES = 15  # the issuing authority heads the first page
_UNION = re.compile(r"\bgazette\s+of\s+india\b|\bgovernment\s+of\s+india\b|\bministry\s+of\b|"
                    r"\blegislative\s+department\b|\bparliament\b", re.I)  # fmt: skip
_BEFORE = (
    r"(?:government|governor|administrator|administration|gazette|state|union\s+territory)"
    r"\s+of\s+(?:the\s+)?(?:state\s+of\s+|union\s+territory\s+of\s+)?"
)
_AFTER = r"(?:\s+state)?\s+(?:government|gazette|real\s+estate|urban|housing|rules|regulations)\b"


def detect_jurisdiction(
    pages: Sequence[Mapping[str, Any]], names: Mapping[str, Sequence[str]]
) -> Found:
    """The jurisdiction that issues the document, as its own words name it: ``names`` maps each
    state's or territory's code to the names it is printed under (the Union's code to none: it
    is read from "THE GAZETTE OF INDIA", "Government of India", "Ministry of ...").

    High confidence when the first page's heading lines name an issuer (a state or territory
    as government, governor, administrator or gazette, or the Union): the first one they name,
    the masthead before what it mentions; low when only the first pages' body names one state
    or territory in those ways (or as its rules' or Real Estate title's first word); not found
    when none, or several."""
    text_pages = [p for p in pages if len(_WORDS.findall(_text(p))) >= 3][:DETECT_PAGES]
    if not text_pages:
        return _missing("jurisdiction", "no page with text to read the issuer from")
    spelled = sorted(((n, code) for code, ns in names.items() for n in ns),
                     key=lambda item: -len(item[0]))  # fmt: skip
    by_name = {_flat(n).lower(): code for n, code in spelled}
    alternatives = "|".join(re.escape(_flat(n)).replace("\\ ", r"\s+") for n, _ in spelled)
    if not alternatives:
        return _missing("jurisdiction", "no jurisdiction names to read")
    named = re.compile(rf"\b{_BEFORE}(?P<a>{alternatives})\b|\b(?P<b>{alternatives}){_AFTER}", re.I)

    def issuers(text: str) -> dict[str, tuple[int, str]]:
        """Each jurisdiction named as an issuer: where first, and in which words."""
        seen: dict[str, tuple[int, str]] = {}
        for m in named.finditer(text):
            code = by_name[_flat(m.group("a") or m.group("b")).lower()]
            seen.setdefault(code, (m.start(), _flat(m.group(0))))
        if union := _UNION.search(text):
            seen.setdefault("CENTRAL", (union.start(), _flat(union.group(0))))
        return seen

    first = text_pages[0]
    heading = issuers("\n".join(_text(first).splitlines()[:ISSUER_LINES]))
    if heading:  # the first issuer its heading names: the masthead, then what it mentions
        code, (_, words) = min(heading.items(), key=lambda item: item[1][0])
        return Found("jurisdiction", code, words, int(first.get("page") or 1))
    body = issuers("\n".join(_text(p) for p in text_pages))
    body.pop("CENTRAL", None)  # the Union's ministries are cited by every state's rules
    if len(body) == 1:
        ((code, (_, words)),) = body.items()
        return Found("jurisdiction", code, words, None, LOW)
    if body:
        shown = ", ".join(sorted(body))
        return _missing("jurisdiction", f"its first pages name several as issuer: {shown}")
    return _missing("jurisdiction", "its first pages name no government, governor or gazette")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _text(page: Mapping[str, Any]) -> str:
    return str(page.get("text") or "")


# ---------------------------------------------------------------------------------------------
# Kind: as `civicsetu inspect` reads it

_QUOTED = re.compile(r"(['\"])(.+?)\1")


def _kind(pages: Sequence[Mapping[str, Any]]) -> Found:
    if not pages:
        return _missing(
            "kind", "no page has English body text (a scan not OCR'd, or another script)"
        )
    kind, reason = detect_kind("\n".join(_text(p) for p in pages))
    if not reason.startswith("matched "):
        return _missing("kind", "no signal of any kind on its first pages")
    scores = sorted((float(v) for v in re.findall(r"[a-z]+ ([\d.]+)", reason.split("scores:")[-1])),
                    reverse=True)  # fmt: skip
    top, second = (scores + [0.0, 0.0])[:2]
    confidence = HIGH if top >= 2.5 and top - second >= 1.0 else LOW
    first = _QUOTED.search(reason)
    page = None
    if first:
        words = _flat(first.group(2)).upper()
        page = next((int(p["page"]) for p in pages if words in _flat(_text(p)).upper()), None)
    return Found("kind", kind, reason, page, confidence)


# ---------------------------------------------------------------------------------------------
# Dates

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|" \
         r"sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"  # fmt: skip
_YEAR = r"(?:19|2[0O])[0-9O]{2}"  # a scan's text layer may read 0 as O ("2O24")
_DAY = r"[0-3]?[0-9]"
_ORD = r"\s*(?:st|nd|rd|th)?"
DATE = (
    rf"(?i:(?<![\d/])(?:(?P<d1>{_DAY})\s*[./-]\s*(?P<m1>[01]?[0-9])\s*[./-]\s*(?P<y1>{_YEAR}|\d\d)"
    rf"|(?P<d2>{_DAY}){_ORD}\s*(?:day\s+of\s+)?(?P<m2>{_MONTH})\.?\s*[,|]?\s*(?P<y2>{_YEAR})"
    rf"|(?P<m3>{_MONTH})\.?\s+(?P<d3>{_DAY}){_ORD}\s*,\s*(?P<y3>{_YEAR}))(?!\d))"
)
_END = r"\s*[.,;]?\s*(?:/.*)?$"  # "New Delhi, the 26th March, 2016/Chaitra 6, 1938 (Saka)"
_LABEL = re.compile(rf"^(?P<prefix>.{{0,80}}?)\b(?:dated?|dt)\b\.?\s*[:.,\-\u2014]*\s*(?:the\s+)?"
                    rf"{DATE}{_END}", re.I)  # fmt: skip
_PLACE = re.compile(r"^[A-Z][A-Za-z.]*(?: [A-Z][A-Za-z.]*){0,3}$")
_PLACE_DATE = re.compile(
    rf"^(?P<place>[A-Z][A-Za-z.]*(?: [A-Z][A-Za-z.]*){{0,3}})\s*,\s*(?:the\s+)?{DATE}{_END}"
)
_PRONOUNCED = re.compile(
    r"^\s*(?:judge?ment\s+)?(?:pronounced|delivered|decided)\s+on|^\s*date\s+of\s+(?:judge?ment|"
    r"order|decision|pronouncement)\b", re.I)  # fmt: skip
_THE_DATE = re.compile(rf"^\s*the\s+{DATE}\s*[.,]?\s*$", re.I)  # under NOTIFICATION
# a notification's or order's own date is printed just below its heading
_HEADING_WORD = re.compile(r"^\s*(?:NOTIFICATIONS?|ORDERS?|O\s*R\s*D\s*E\s*R)\s*[:.\-]*\s*$", re.I)
_ASSENT = re.compile(rf"^\[\s*{DATE}\s*\.?\s*\]$")  # an Act's date of assent, under its title
_MASTHEAD = re.compile(rf"\b(?:MON|TUES|WEDNES|THURS|FRI|SATUR|SUN)DAY\s*,\s*{DATE}", re.I)
_NOT_A_PREFIX = re.compile(r"\b(?:order|letter|gazette|judge?ment|impugned|vide|under|by|in|from|"
                           r"with|of|on|read|ref)\b", re.I)  # fmt: skip
_REFERENCE = re.compile(r"\bNo\b\.?\s*[:.]?\s*\S*\d")  # "G.O.Ms.No. 123", "No: DOH 184"
# the document's own kind and number before its date: "Office Order: A/E-1/2020, Dt: 14-05-2020"
_OWN_NUMBER = re.compile(r"^(?:office\s+|speaking\s+)?(?:order|circular|notification|memo)"
                         r"(?:\s*no\b\.?\s*[:.\-]?|\s*[:.\-])\s*\S*\d(?:\S*|\s+of\s+\d{4})$",
                         re.I)  # fmt: skip
# a date's label on a line of its own, the date on the next ("Date of decision:" / "18.04.2024",
# as a header table prints them)
_LABEL_ALONE = re.compile(r"^\s*(?:dated?|dt|date\s+of\s+(?:decision|order|judge?ment|"
                          r"pronouncement))\s*\.?\s*[:.\-\u2014]*\s*$", re.I)  # fmt: skip
_BARE_DATE = re.compile(rf"^\s*(?:the\s+)?{DATE}\s*[.,]?\s*$", re.I)
# the formal dating of an order's opening: "On 4th day of August, 2025", "this the 4th day of"
_DAY_OF = re.compile(rf"^\s*(?:on|this)\s+(?:the\s+)?"
                     rf"(?=[0-3]?[0-9]{_ORD}\s+day\s+of\b){DATE}", re.I)  # fmt: skip
# a date known to the month only: its day left for a hand to write ("DATED ____ APRIL, 2017")
_MONTH_ONLY = re.compile(rf"\bdated?\b\.?\s*[:.,\-]*\s*(?:the\s+)?[_.\s]*(?P<m>{_MONTH})\.?\s*,?\s*"
                         rf"(?P<y>{_YEAR})\s*[.,]?\s*$", re.I)  # fmt: skip
FOOT_LINES = 15  # a date at the foot, beside the signature: the last page's last lines
_BRACKETED = re.compile(r"^\s*[(\[]\s*(?P<inner>.*?)\s*[)\]]\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:\(?\d{1,2}[.)]|\([a-z]{1,3}\)|[ivx]{1,4}[.)])\s", re.I)
# "Read the following:" / "Ref:" lists the orders a G.O. builds on, each with its date: never
# the G.O.'s own date; the list ends at its separator or at ORDER / NOTIFICATION
_READ = re.compile(r"^\s*(?:read|ref(?:erences?)?)\b[^:]{0,30}[:\-\u2014]*\s*$|^\s*read\s*:", re.I)
_READ_END = re.compile(r"^\s*(?:[*\-_=~.\s]{3,}|O\s*R\s*D\s*E\s*R\b|NOTIFICATION\b)", re.I)


@dataclass(frozen=True)
class _DateSeen:
    strength: int  # 3: the document's own date line, 2: an Act's assent, 1: the Gazette's
    page: int
    line: int
    date: dt.date
    words: str
    misread: bool  # an O read for a 0
    sure: bool = True  # False: a date a person would check (a formal opening, a bare foot date)


def _to_date(m: re.Match[str]) -> tuple[dt.date, bool] | None:
    for d, mo, y in (("d1", "m1", "y1"), ("d2", "m2", "y2"), ("d3", "m3", "y3")):
        if m.group(y) is None:
            continue
        year = m.group(y)
        if len(year) == 2:  # "Dt. 14.05.20": this century unless that is still to come
            now = dt.date.today().year
            year = str(now - now % 100 + int(year) - (100 if int(year) > now % 100 else 0))
        raw_month = m.group(mo).lower().rstrip(".")
        month = int(raw_month) if raw_month.isdigit() else _MONTHS.get(raw_month)
        try:
            return dt.date(int(year.upper().replace("O", "0")), month or 0, int(m.group(d))), (
                "O" in year.upper()
            )
        except ValueError:
            return None
    return None


def _own_lines(page: Mapping[str, Any]) -> list[tuple[int, str]]:
    """The page's lines (with their index) less a G.O.'s "Read the following:" list."""
    out, reading = [], False
    for i, line in enumerate(_text(page).splitlines()):
        if _READ.match(line):
            reading = True
            continue
        if reading and _READ_END.match(line):
            reading = False
        if not reading:
            out.append((i, line))
    return out


def _own_date(line: str) -> re.Match[str] | None:
    """The date of a line that is the document's own date line: "Dated: 28-01-2019", "G.O.Ms.No.
    123, dated 05.03.2019", "Lucknow, 27-10-2016", "The 5th August 2021", "Pronounced on: ..."."""
    label = _LABEL.match(line)
    if label and not _LIST_ITEM.match(line):
        prefix = label.group("prefix").strip(" ,.;:-\u2014")
        if (
            not prefix
            or _OWN_NUMBER.match(prefix)
            or (
                (_PLACE.match(prefix) or _REFERENCE.search(prefix))
                and not _NOT_A_PREFIX.search(prefix)
            )
        ):
            return label  # fmt: skip
    place = _PLACE_DATE.match(line)
    if place and not _NOT_A_PREFIX.search(place.group("place")):
        return place
    if _PRONOUNCED.match(line):
        return re.search(DATE, line)
    return _THE_DATE.match(line)


def _dates_on(
    page: Mapping[str, Any], *, last: bool = False, past_the_head: bool = False
) -> list[_DateSeen]:
    """The dates ``page`` prints as a document's own, strongest first in kind (see
    :class:`_DateSeen`); ``last``: it is the document's last page, whose foot may date it;
    ``past_the_head``: a page after the first ones, where only a labelled date line ("Dated:",
    "<place>, <date>", "Pronounced on") is sure."""
    seen = []
    number = int(page["page"])
    heading_at = label_at = -9
    lines = _own_lines(page)
    foot = lines[-FOOT_LINES:][0][0] if last and lines else None
    for i, raw in lines:
        line = _flat(raw)
        bracketed = _BRACKETED.match(line)
        inner = bracketed.group("inner") if bracketed else line  # "(Date: 25-09-2025)"
        if _HEADING_WORD.match(line):
            heading_at = i
        if _LABEL_ALONE.match(inner):
            label_at = i
            continue
        sure = True
        strength = 4 if i - heading_at <= 2 else 3
        found: tuple[int, re.Match[str] | None] = (strength, _own_date(inner))
        if found[1] is not None and past_the_head and _THE_DATE.match(inner):
            sure = False  # "The 19th July, 2023." deep in a document: another paper's heading
        if found[1] is None and i - label_at <= 2:  # its label on the line above
            found = (found[0], _BARE_DATE.match(inner))
        if found[1] is None:
            found, sure = (3, _DAY_OF.match(inner)), False
        if found[1] is None and foot is not None and i >= foot:
            found = (3, _BARE_DATE.match(inner))
        if found[1] is None:
            found, sure = (2, _ASSENT.match(line)), True
        if found[1] is None:
            found = (1, _MASTHEAD.search(line))
        read = _to_date(found[1]) if found[1] is not None else None
        if read is not None:
            seen.append(_DateSeen(found[0], number, i, read[0], line, read[1], sure))
    return seen


def _month_only(pages: Sequence[Mapping[str, Any]]) -> Found | None:
    """A date line whose day is blank (left for a hand to write): "not found", its month kept
    as the value ("2017-04") for a user who agrees to take the month's first day."""
    for page in pages:
        for _, raw in _own_lines(page):
            m = _MONTH_ONLY.search(_flat(raw))
            month = _MONTHS.get(m.group("m").lower().rstrip(".")) if m else None
            if m and month:
                year = int(m.group("y").upper().replace("O", "0"))
                return Found("date", f"{year:04d}-{month:02d}",
                             f'the day is not printed (written by hand?): page {page["page"]}: '
                             f'"{_flat(raw)}" gives {calendar.month_name[month]} {year} only',
                             int(page["page"]), NOT_FOUND)  # fmt: skip
    return None


def _date(pages: Sequence[Mapping[str, Any]], foot: Sequence[Mapping[str, Any]] = ()) -> Found:
    """The document's own date from its first ``pages`` or, when they print none for sure, its
    last pages ``foot`` (beyond the first; the foot of the very last page may date it)."""
    final = int((foot or pages)[-1]["page"]) if (foot or pages) else None
    seen = [s for p in pages for s in _dates_on(p, last=int(p["page"]) == final)]
    if not any(s.sure and s.strength >= 2 for s in seen):  # no date line, no Act's assent
        for p in foot:
            seen += _dates_on(p, last=int(p["page"]) == final, past_the_head=True)
    if not seen:
        return _month_only([*pages, *foot]) or _missing(
            "date", "no date line of its own (\"Dated: ...\", \"<place>, <date>\", a Gazette "
            "masthead) on its first pages or at its foot")  # fmt: skip
    pool = [s for s in seen if s.sure] or seen  # a date to check only when none is sure
    best = min(pool, key=lambda s: (-s.strength, s.page, s.line))
    rivals = {s.date for s in pool if s.strength == best.strength and s.date != best.date}
    others = {s.date for s in pool if s.strength >= 3 and s.date != best.date}
    words = best.words
    confidence = (HIGH if best.strength >= 3 and best.sure and not best.misread and not rivals
                  else LOW)  # fmt: skip
    if best.strength == 2:
        words += " (the Act's date of assent: no date line of its own)"
    elif best.strength == 1:
        words += " (the Gazette's date of issue: no date line of its own)"
    elif not best.sure:
        words += " (not a dated line: check it)"
    if best.misread:
        words += " (an O read as 0)"
    if others:
        words += f" (it prints {', '.join(d.isoformat() for d in sorted(others))} too)"
    return Found("date", best.date, words, best.page, confidence)


_FORCE_WORDS = re.compile(r"\bcome\s+into\s+force\b", re.I)


def _words_around(text: str, start: int, end: int, before: int, after: int) -> str:
    """``text[start:end]`` with about ``before`` and ``after`` characters of whole words."""
    a = text.rfind(" ", 0, max(0, start - before)) + 1
    b = text.find(" ", min(len(text), end + after))
    return text[a : b if b > 0 else len(text)].strip()


def _in_force(pages: Sequence[Mapping[str, Any]]) -> Found:
    for page in pages:
        text = _flat(_text(page))
        date = in_force_on(text)
        if date is None:
            continue
        windows = (_words_around(text, m.start(), m.end(), 60, 60)
                   for m in _FORCE_WORDS.finditer(text))  # fmt: skip
        words = next((w for w in windows if in_force_on(w) == date), "come into force")
        return Found("in_force", date, words, int(page["page"]), HIGH)
    return _missing("in_force", "it names no date it comes into force on")


# ---------------------------------------------------------------------------------------------
# Titles

_YEAR_END = r"(?:1[89]|20)\d\d"
_SHORT_TITLE = re.compile(
    r"\b(?:These|This|The)\s+(?:rules|regulations|order|act|notification|scheme|bye-?laws)\s+may"
    rf"\s+be\s+called\s*,?\s*(?:as\s+)?(?:the\s+)?[\"'`]?\s*(?P<title>.{{5,250}}?\b{_YEAR_END})"
    r"(?=\s*[.\"'`;,)]|\s*$|\s+and\b|\s+\(\d{1,2}\)\s)",  # "(2) It shall ..." follows
    re.I,
)
# "Short title, extent and commencement." printed in the margin and read into the clause's lines
_NOTE_WORD = r"(?:short\s+titles?|extent|commencement)"
_MARGIN_NOTE = re.compile(rf"\s*\b{_NOTE_WORD}(?:\s*,?\s*(?:and\s+)?{_NOTE_WORD})*(?:\s*,?\s+and)?"
                          r"\b\.?", re.I)  # fmt: skip
_KIND_WORD = r"(?:ACT|RULES|REGULATIONS|ORDER|CODE|SCHEME|BYE-?LAWS)"
_HEADING_END = re.compile(rf"^(?P<t>.*\b{_KIND_WORD}\s*,?\s*{_YEAR_END})\s*\.?\]?\s*$", re.I)
_STOP_LINE = re.compile(
    r"^\s*(?:NOTIFICATION|ORDER|ABSTRACT|CIRCULAR|CHAPTER\b.*|PRELIMINARY|GOVERNMENT\s+OF\b.*|"
    r"MINISTRY\s+OF\b.*|.*\bDEPARTMENT\b.*|.*\bEXTRAORDINARY\b.*|PUBLISHED\s+BY\s+AUTHORITY|"
    r"PART\s+[IVX]+\b.*|FREQUENTLY\s+ASKED\b.*)\s*[.:]?\s*$",
    re.I,
)
_SMALL_WORDS = {"of", "and", "the", "for", "in", "to", "on", "at", "by", "a", "an", "or", "with",
                "from", "under", "into"}  # fmt: skip
_ROMAN = re.compile(r"(?=[IVX])X{0,3}(?:IX|IV|V?I{0,3})")


def _capitalised(line: str) -> bool:
    """Every word of four letters or more begins with a capital: a heading, not a sentence."""
    words = [w.strip("()[]\"',.:;") for w in line.split()]
    return all(w[:1].isupper() for w in words if len(w) >= 4 and w[:1].isalpha())


def _title_case(text: str) -> str:
    """A heading in capitals in title case: "THE REAL ESTATE (REGULATION AND DEVELOPMENT) ACT,
    2016" -> "The Real Estate (Regulation and Development) Act, 2016"; a word printed in mixed
    case ("FAQs") is kept, and so is text mostly in mixed case."""
    words = text.split()
    capitals = [w for w in words if sum(c.isalpha() for c in w) > 1 and not _has_lower(w)]
    if len(capitals) * 2 <= sum(1 for w in words if any(c.isalpha() for c in w)):
        return text
    out = []
    for i, word in enumerate(words):
        core = word.strip("()[],.:;'\"")
        if (
            _has_lower(word)
            or any(c.isdigit() for c in word)
            or "." in core
            or len(core) <= 1
            or _ROMAN.fullmatch(core)
        ):
            out.append(word)  # fmt: skip
        elif i > 0 and core.lower() in _SMALL_WORDS:
            out.append(word.lower())
        else:
            lowered = word.lower()
            at = next((j for j, c in enumerate(lowered) if c.isalpha()), 0)
            out.append(lowered[:at] + lowered[at:].capitalize())
    return " ".join(out)


def _has_lower(word: str) -> bool:
    return any(c.islower() for c in word)


def _clean_title(text: str) -> str:
    return _title_case(_flat(text).strip(" \"'`.,;:\u2014-"))


def _balanced(text: str) -> bool:
    return text.count("(") == text.count(")")


TitleReader = Callable[[Sequence[Mapping[str, Any]], str | None], Found | None]


def _short_title(pages: Sequence[Mapping[str, Any]], kind: str | None) -> Found | None:
    for page in pages:
        text = _flat(_text(page))
        m = _SHORT_TITLE.search(text)
        if m and _balanced(m.group("title")):
            words = _words_around(text, m.start(), m.end(), 12, 0)
            title = _MARGIN_NOTE.sub("", m.group("title"))  # a Gazette's margin, read inline
            return Found("title", _clean_title(title), words, int(page["page"]), HIGH)
    return None


def _heading(pages: Sequence[Mapping[str, Any]], kind: str | None) -> Found | None:
    for page in pages:
        lines = [_flat(line) for line in _text(page).splitlines()][:TITLE_LINES]
        for i, line in enumerate(lines):
            m = _HEADING_END.match(line)
            if not m or not line[:1].isupper() and line[:1] not in "(\"'":
                continue
            if not _capitalised(line) or _STOP_LINE.match(line):
                continue
            parts = [m.group("t")]
            caps = line.isupper()
            for before in reversed(lines[max(0, i - 3) : i]):
                if (
                    _STOP_LINE.match(before)
                    or before[-1:] in ".:;,-\u2014"
                    or not before
                    or not _capitalised(before)
                    or (caps and not before.isupper())
                ):
                    break  # fmt: skip
                parts.insert(0, before)
            title = " ".join(parts)
            words_before = re.split(rf"\b{_KIND_WORD}\b", title, flags=re.I)[0].split()
            if len(words_before) < 2 or not _balanced(title):
                continue
            confidence = HIGH if caps or i < 8 else LOW
            found = Found("title", _clean_title(title), " / ".join(parts), int(page["page"]),
                          confidence)  # fmt: skip
            if kind == "faq":
                faq = next((x for x in lines[i + 1 : i + 3] if "FREQUENTLY ASKED" in x.upper()), "")
                if faq:
                    title = f"{found.value}: {_clean_title(faq)}"
                    return Found("title", title, f"{found.words} / {faq}", found.page, HIGH)
            return found
    return None


_GO_NUMBER = re.compile(r"\bG\.\s?O\.?\s*\(?\s*(?:Ms|Rt|P)\s*\)?\.?\s*No\.?\s*\d+", re.I)
_DOC_NUMBER = re.compile(r"^\s*(?P<n>(?:CIRCULAR|(?:OFFICE\s+)?ORDER|NOTIFICATION|MEMORANDUM)\s+"
                         r"No\.?\s*[:.]?\s*[^\s,]+(?:\s+of\s+\d{4})?)", re.I)  # fmt: skip
_ABSTRACT = re.compile(r"^\s*ABSTRACT\s*[:.\-\u2014]*\s*$", re.I)
# "ABSTRACT: <subject>" on one line, and "Sub:" / "Subject -" lines
_SUBJECT = re.compile(r"^\s*(?:Sub(?:ject)?|ABSTRACT)\s*[:.\-\u2014]+\s*(?P<s>.+)$", re.I)
# What ends an abstract or subject: a rule, the G.O.'s number, its "Read" list, ORDER, the
# salutation, a list item, or the department's heading in capitals (an abstract that opens with
# the department's name in its own case is the subject itself: "Municipal Administration &
# Urban Development Department - Real Estate ... - Orders - Issued.")
_SUBJECT_END = re.compile(
    r"^\s*(?:[*\-_=~.\s]{3,}|G\.\s?O\.|read\b|ref|O\s*R\s*D\s*E\s*R\b|ORDER\b|NOTIFICATION\b|"
    r"sir\b|madam\b|(?-i:[A-Z0-9 &()/.,\-\u2013]*\bDEPARTMENT\b[A-Z0-9 &()/.,\-\u2013]*$)|"
    r"\(?\d{1,2}[.)]\s)",
    re.I,
)


def _designation(page: Mapping[str, Any]) -> str | None:
    """A G.O.'s or circular's own number ("G.O.Ms.No. 123"), not one its references cite."""
    for _, line in _own_lines(page):
        go = _GO_NUMBER.search(line)
        if go:
            return _flat(go.group(0))
        other = _DOC_NUMBER.match(line)
        if other:
            return _flat(other.group("n")).rstrip(",.")
    return None


def _subject_lines(lines: Sequence[str], start: int, first: str) -> list[str]:
    got = [first] if first else []
    for line in lines[start:]:
        if not line.strip() or _SUBJECT_END.match(line) or len(got) >= 5:
            break
        got.append(line)
        if line.rstrip().endswith("."):
            break
    return got


def _subject(pages: Sequence[Mapping[str, Any]], kind: str | None) -> Found | None:
    """A G.O.'s abstract, or a "Sub:" line, with the document's own number before it."""
    for page in pages:
        lines = _text(page).splitlines()
        for i, line in enumerate(lines):
            got: list[str] = []
            if _ABSTRACT.match(line):
                got = _subject_lines(lines, i + 1, "")
            elif m := _SUBJECT.match(line):
                got = _subject_lines(lines, i + 1, m.group("s"))
            subject = _clean_title(" ".join(got))
            if len(subject.split()) < 3:
                continue
            number = _designation(page)
            title = f"{number}: {subject}" if number else subject
            shown = [line, *(got if _ABSTRACT.match(line) else got[1:])]
            words = " / ".join(_flat(x) for x in shown)
            return Found("title", title, words, int(page["page"]), HIGH if number else LOW)
    return None


_GAZETTE_NUMBER = re.compile(r"\b(?:S\.\s?O\.|G\.\s?S\.\s?R\.)\s*\d{1,5}\s*(?:\(\s*E\s*\))?", re.I)
_UNDER = re.compile(
    r"in\s+exercise\s+of\s+the\s+powers?\s+conferred\s+(?:on\s+it\s+)?by\s+(?P<ref>.{3,120}?)\s+"
    rf"of\s+the\s+(?P<law>[A-Z][^;:]{{5,160}}?\b(?:Act|Code|Rules|Regulations),?\s+{_YEAR_END})",
    re.I,
)


def _numbered(pages: Sequence[Mapping[str, Any]], kind: str | None) -> Found | None:
    """A Gazette notification's number ("S.O. 1216(E)") and the power it is made under."""
    for page in pages:
        text = _flat(_text(page))
        number = _GAZETTE_NUMBER.search(text)
        if not number:
            continue
        label = re.sub(
            r"^(S\.O\.|G\.S\.R\.)", r"\1 ", re.sub(r"\s+", "", number.group(0)), flags=re.I
        )
        word = (kind or "notification").capitalize()
        under = _UNDER.search(text, number.end())
        if under:
            title = f"{word} {label} under {_flat(under.group('ref'))} of the " \
                    f"{_flat(under.group('law'))}"  # fmt: skip
            words = f"{number.group(0)} ... {under.group(0)}"
            return Found("title", title, words, int(page["page"]), HIGH)
        return Found("title", f"{word} {label}", number.group(0), int(page["page"]), LOW)
    return None


_ROLE_FIRST = r"(?:original\s+)?(?:appellants?|petitioners?|applicants?|complainants?|plaintiffs?)"
_ROLE_SECOND = (
    r"(?:non[\s-]*applicants?|respondents?|opponents?|defendants?|opposite\s+part(?:y|ies))"
)
_ROLE = re.compile(rf"^(?P<name>.*?)(?:\s*[.,:\u2026_\-]{{2,}}\s*|[\s,]+|^)"
                   rf"(?P<role>{_ROLE_FIRST}|{_ROLE_SECOND})\s*(?:nos?\.?\s*[\d,&\s]+)?\s*[.,]?\s*$",
                   re.I)  # fmt: skip
_VERSUS = re.compile(r"^\s*[-\u2014]?\s*(?:v|vs|versus)\s*\.?\s*[-\u2014]?\s*$", re.I)
_CASE = re.compile(r"\b(?:writ\s+petition|appeal|app(?:lic|uc)ation|petition|complaint|suit|case)"
                   r"\s*(?:no\b|no\.|number)", re.I)  # fmt: skip
_BLOCK_START = re.compile(r"^\s*(?:with|in|and)\s*$|^\s*\(.*\)\s*$|^\s*\S*\d\S*\s*$", re.I)
_COURT = re.compile(r"^\s*(?:in\s+the\s+|before\s+(?:the\s+)?)(?P<court>.{6,90}?)[,.]?\s*$", re.I)
_FORUM = re.compile(r"\b(?:court|tribunal|authority|commission|forum|bench)\b", re.I)


def _court(lines: Sequence[str]) -> str | None:
    """ "IN THE HIGH COURT OF JUDICATURE AT BOMBAY", "BEFORE THE MAHARASHTRA REAL ESTATE /
    APPELLATE TRIBUNAL, MUMBAI": the court, its second line joined when the first does not
    name a court."""
    for i, line in enumerate(lines):
        m = _COURT.match(line)
        if m:
            court = m.group("court")
            if not _FORUM.search(court) and i + 1 < len(lines) and _FORUM.search(lines[i + 1]):
                court = f"{court} {lines[i + 1]}"
            return court.strip(" ,.")
    return None


def _party(line: str) -> str:
    name = _ROLE.match(line)
    text = name.group("name") if name else line
    text = re.sub(r"^\s*\d{1,2}\s*[.)]\s*", "", text)  # "1. Union of India and ors."
    text = re.sub(r"(?:\s+[.,:;\u2026]+\w?[.,:;\u2026]*)+$", "", text)  # "& Ors. .r," (OCR)
    return _flat(text).strip(" ,:;-\u2014")


def _parties(pages: Sequence[Mapping[str, Any]], kind: str | None) -> Found | None:
    """A judgment's parties: the first line of each side's block ("A ... Petitioners / Vs. /
    B ... Respondents"), its first case number and its court."""
    for page in pages[:2]:
        lines = [_flat(x) for x in _text(page).splitlines()]
        start = 0
        sides: list[tuple[str, int]] = []
        case = None  # the case number printed last before the parties
        for i, line in enumerate(lines):
            if _VERSUS.match(line) or _CASE.search(line) or _BLOCK_START.match(line):
                start = i + 1
                case = line if _CASE.search(line) and not sides else case
                continue
            role = _ROLE.match(line)
            if not role:
                continue
            first = re.match(_ROLE_FIRST, role.group("role"), re.I) is not None
            if first == (len(sides) == 0):
                sides.append((_party(lines[start]), i - start))
                start = i + 1
            if len(sides) == 2:
                break
        if len(sides) < 2 or not all(name for name, _ in sides):
            continue
        extra = ", ".join(_title_case(x) for x in (case, _court(lines)) if x)
        title = f"{sides[0][0]} v. {sides[1][0]}" + (f" ({extra})" if extra else "")
        confidence = HIGH if all(size <= 6 for _, size in sides) else LOW
        return Found("title", title, f"{sides[0][0]} ... v. ... {sides[1][0]}",
                     int(page["page"]), confidence)  # fmt: skip
    return None


_BY_KIND: dict[str, tuple[TitleReader, ...]] = {
    "act": (_short_title, _heading),
    "rules": (_short_title, _heading),
    "regulations": (_short_title, _heading),
    "order": (_short_title, _subject, _parties, _heading, _numbered),  # an authority's order
    "notification": (_short_title, _subject, _numbered, _heading),
    "circular": (_subject, _numbered, _heading),
    "faq": (_heading,),
    "judgment": (_parties,),
}
_ANY_KIND: tuple[TitleReader, ...] = (_short_title, _subject, _numbered, _heading)


def _title(pages: Sequence[Mapping[str, Any]], kind: str | None) -> Found:
    if not pages:
        return _missing("title", "no page has English body text to read it from")
    own = _BY_KIND.get(kind or "", ())
    readers = [*own, *(r for r in _ANY_KIND if r not in own and kind != "judgment")]
    for reader in readers:
        found = reader(pages, kind)
        if found is not None:
            return found
    what = "its parties (\"A ... Petitioner v. B ... Respondent\")" if kind == "judgment" else (
        "a short title (\"... may be called the ...\"), a title heading, an abstract or "
        "\"Sub:\" line, or a Gazette number")  # fmt: skip
    return _missing("title", f"no {what} on its first pages")


# ---------------------------------------------------------------------------------------------
# What it amends and repeals: as a run reads it


def _instruments(
    pages: Sequence[Mapping[str, Any]],
    kind: str | None,
    titles: Mapping[str, str],
    fallback_titles: Mapping[str, str],
) -> tuple[Found, Found]:
    if kind is None:
        why = "the kind is not known"
        return _missing("amends", why), _missing("repeals", why)
    if kind not in AMENDING_KINDS:
        why = f"a document of kind {kind!r} is not read as amending or repealing"
        return _missing("amends", why), _missing("repeals", why)
    texts = [(int(p["page"]), _text(p)) for p in pages]
    instrument = None
    for candidates in (titles, fallback_titles):
        instrument = instrument_of("", "", dt.date.min, texts, kind=kind, amends=(), repeals=(),
                                   titles=dict(candidates))  # fmt: skip
        if instrument is not None:
            break
    every = {**fallback_titles, **titles}
    out = []
    for name, keys in (("amends", instrument.amends if instrument else ()),
                       ("repeals", instrument.repeals if instrument else ())):  # fmt: skip
        if not keys:
            out.append(_missing(name, f"its text names no registered document it {name[:-1]}s "
                                      f"(of {len(every)} it could)"))  # fmt: skip
            continue
        page, words = _naming(texts, keys[0], every[keys[0]])
        out.append(Found(name, tuple(keys), words, page, HIGH))
    return out[0], out[1]


def _naming(texts: Sequence[tuple[int, str]], key: str, title: str) -> tuple[int | None, str]:
    """The page and words where ``texts`` name the registered ``title`` in an enacting formula."""
    short = re.search(rf"^.*?\b{_YEAR_END}\b", title)
    words = re.findall(r"[a-z0-9]+", (short.group(0) if short else title).lower())
    pattern = re.compile(r"[^a-z0-9]+".join(words), re.I)
    fallback: tuple[int | None, str] = (None, f"its text names {title!r}")
    for number, text in texts:
        flat = _flat(text)
        for m in pattern.finditer(flat):
            around = _words_around(flat, m.start(), m.end(), 100, 100)
            amended, repealed = named_documents(around, {key: title})
            if key in amended or key in repealed:
                return number, around
            if fallback[0] is None:
                fallback = (number, around)
    return fallback
