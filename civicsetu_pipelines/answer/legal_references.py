"""Explicit legal references in a question: the provisions it names and where they belong.

Pure domain code (no Dagster, no database), compiled once at import. :func:`find_references`
finds, in the canonical question, sections (``Section 18(2)``, ``ss. 12, 14 and 18``, ``clause
(a) of sub-section (2) of section 4``), rules, forms, annexures, a form's own numbered paragraphs
(``clause 12 of the agreement for sale``, ``para 3 of Annexure A``) and FAQ questions; it leaves out
sections and rules of other enactments (``section 420 IPC``, ``rule 3 of the Companies Rules``)
and attaches a rule, form or annexure to the state named next to it (``rule 16 of the Gujarat
rules``, ``Gujarat's Form A``). :func:`act_mentions` finds where the question names the RERA Act
itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from civicsetu_pipelines.answer.places import PlaceMention
from civicsetu_pipelines.ingest import paragraph_word


def word_set(text: str) -> frozenset[str]:
    """The words of a whitespace-separated list (stop words and the like)."""
    return frozenset(text.split())


AGREEMENT_CLAUSE = "Agreement"  # a clause of the model agreement for sale: "Agreement para 12"


@dataclass(frozen=True)
class ExplicitReference:
    """One provision the question names, as written (offsets index ``Query.text``)."""

    kind: str  # section | rule | form | annexure | question | clause (a form's paragraph)
    number: str  # "18", "4A", "N", "A", "5"; a clause's own number ("12")
    path: tuple[str, ...]  # ("(2)",) or ("(2)", "(a)")
    # "Section 18(2)", "Rule 16", "Form N", "Annexure A", "Question 5"; a clause: "Annexure A
    # para 12", or "Agreement para 12" for the model agreement for sale, whatever its form's label
    label: str
    jurisdiction: str | None  # "CENTRAL" for sections and FAQ questions; a state code; None
    phrase: str
    start: int
    end: int

    @property
    def soft(self) -> bool:
        """A clause of "the agreement": the buyer's own agreement may be meant (its clauses
        follow the model agreement's where the state prescribes one). It names the model
        agreement's paragraph where exactly one document in scope has it, and is never a
        reason to refuse: not found, or found in several states, it names nothing."""
        return self.kind == "clause" and self.label.startswith(f"{AGREEMENT_CLAUSE} ")


_KIND_WORD = {
    "section": "Section",
    "rule": "Rule",
    "form": "Form",
    "annexure": "Annexure",
    "question": "Question",
}
# A path item inside parentheses: (2), (2A), (za), (iv)
_TOKEN = r"(?:\d{1,3}[A-Za-z]?|[A-Za-z]{1,5})"
_PAREN = rf"\(\s*{_TOKEN}\s*\)"
# ... or bare in a chain: "sub-section 2 of section 4", "clause b of section 9"
_BARE = (
    r"(?<!\w)(?:\d{1,3}[A-Za-z]?"
    r"|(?!(?:or|of|to|in|is|an|as|at|by|on|no|if|it|be|do)\b)[a-z]{1,2})(?!\w)"
)
_LIST_SEP = r"(?:\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or|&)\s+|\s*&\s*)"
_PATHS = rf"(?:{_PAREN}|{_BARE})(?:{_LIST_SEP}(?:{_PAREN}|{_BARE}))*"
# A section or rule number: 1-3 digits and an optional letter, never part of a year, never the
# number of an Act ("16 of 2016").
_NUM = r"\d{1,3}(?:[A-Za-z](?![A-Za-z]))?(?!\d)(?!\s+of\s+(?:1[89]|20)\d\d)"
_ITEM = rf"{_NUM}(?:\s?{_PAREN}){{0,4}}"  # at most four levels below the number
# A further item of a list must not be a quantity ("section 18 and 45 days").
_NOT_QUANTITY = (
    r"(?!\s*(?:%|days?|weeks?|months?|years?|others?|more|times|per\b|percent|lakhs?|crores?"
    r"|rupees|rs\b|flats?|units?|apartments?|plots?)\b)"
)
_SECTION_KW = r"(?:\bsections?\b|\bsecs?\b\.?|(?<![\w.])ss?\.|§§?)"
_RULE_KW = r"(?:\brules?\b|(?<![\w.])rr?\.)"
_REF_RE = re.compile(
    rf"""
    (?<!\w)(?=[a-z§])  # only at the start of a word: much faster
    (?:(?:the\s+)?(?:(?:first|second|third|fourth)\s+)?(?:proviso|explanation)\s+(?:to|of)\s+
       (?:the\s+)?)?
    (?:sub-?\s?clauses?\s*(?P<subclause>{_PATHS})\s+of\s+(?:the\s+)?)?
    (?:clauses?\s*(?P<clause>{_PATHS})\s+of\s+(?:the\s+)?)?
    (?:(?:sub-?\s?sections?|sub-?\s?rules?)\s*(?P<sub>{_PATHS})\s+of\s+(?:the\s+)?)?
    (?P<kw>{_SECTION_KW}|{_RULE_KW})\s*(?:[-:]\s*)?(?:no\.?\s*)?
    (?P<numbers>{_ITEM}(?:(?:{_LIST_SEP}|\s*(?:-|—|\bto\b)\s*){_ITEM}{_NOT_QUANTITY})*)
    """,
    re.IGNORECASE | re.VERBOSE,
)
_ITEM_RE = re.compile(rf"(?P<num>\d{{1,3}}[A-Za-z]?)(?P<path>(?:\s?{_PAREN})*)")
_PAREN_RE = re.compile(rf"{_PAREN}")
_BARE_OR_PAREN_RE = re.compile(rf"{_PAREN}|{_BARE}", re.IGNORECASE)
_RANGE_SEP = re.compile(r"-|—|\bto\b", re.IGNORECASE)
_MAX_RANGE = 50
_MAX_PATHS = 20

_FORM_RE = re.compile(
    r"\b(?P<kw>forms?)\b\s*(?:no\.?\s*|number\s+|#\s*)?(?P<sep>[-:]\s*)?"
    r"(?P<q>['\"]?)(?P<id>[A-Za-z]{1,2}|\d{1,2})(?P=q)(?!\w)",
    re.IGNORECASE,
)
_FORM_MORE = re.compile(r"(?:\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or|&)\s+)(['\"]?)([A-Z])\1(?!\w)")
_ANNEXURE_RE = re.compile(
    r"\b(?:annexure|annex)s?\b\s*(?:no\.?\s*|number\s+)?(?P<sep>[-:]\s*)?"
    r"(?P<q>['\"]?)(?P<id>[A-Za-z]{1,4}|\d{1,2})(?P=q)(?!\w)",
    re.IGNORECASE,
)
# A form's own numbered paragraph: "clause 12 of the agreement for sale", "para 3 of Annexure A",
# "clause 5 in Form B"; the agreement by its name (what its form is labelled differs by state).
_CLAUSE_RE = re.compile(
    r"\b(?:clause|para(?:graph)?|article)\s*(?:no\.?\s*)?(?P<n>\d{1,3})(?![\d(])\s+(?:of|in)\s+"
    r"(?:the\s+)?(?:(?P<kind>annexure|annex|form)\s*(?P<q>['\"]?)(?P<id>[A-Z]{1,2}|\d{1,2})(?P=q)"
    r"(?!\w)|(?P<agreement>(?:[\w'’-]+\s+){0,3}?agreement)\b)",
    re.IGNORECASE,
)
_ROMAN = re.compile(r"[IVX]{1,4}")
_DIGIT = re.compile(r"\d")
# After a lower-case single letter, "form a" is a form only where English could not go on.
_LOWER_FORM_OK = re.compile(
    r"\s*(?:[?.,;:!)]|$|(?:of|under|in|and|or|is|prescribed|required)\b)", re.IGNORECASE
)
_PRONOUN_I = re.compile(r"\s+[a-z]")

_FAQ_WORD = re.compile(r"\bfaqs?\b|\bfrequently\s+asked\s+questions\b", re.IGNORECASE)
_FAQ_RE = re.compile(
    r"\bFAQs?\s*(?:no\.?\s*|number\s+|#\s*|question\s+(?:no\.?\s*)?|q\.?\s*)?(?P<n>\d{1,3})(?!\d)",
    re.IGNORECASE,
)
_FAQ_QUESTION_RE = re.compile(
    r"(?:\bquestions?|\bq)\s*\.?\s*(?:no\.?\s*|number\s+|#\s*)?(?P<n>\d{1,3})(?!\d)",
    re.IGNORECASE,
)

# -- not RERA: "section 5 of the Companies Act, 2013", "section 420 IPC", "Companies Act s. 5"
_EXT_AFTER = re.compile(
    r"\s*,?\s*(?:of|under|in)\s+(?:the\s+)?(?P<name>(?:[\w&.'()-]+\s+){0,6}?)"
    r"(?P<kw>act|code|ordinance|procedure)\b(?!\s+of\s+[a-z])",
    re.IGNORECASE,
)
_EXT_ABBR_AFTER = re.compile(
    r"\s*,?\s*(?:(?:of|under|in)\s+(?:the\s+)?)?"
    r"(?:ipc|i\.\s?p\.\s?c\.?|cr\.?\s?p\.?\s?c\.?|c\.\s?p\.\s?c\.?|cpc|mofa|ibc|(?-i:NI|IT)\s+act)(?!\w)",
    re.IGNORECASE,
)
_EXT_BEFORE = re.compile(
    r"(?:(?P<prev>[\w().'-]+)\s+)?(?P<kw>act|code)(?:\s*,?\s*(?:1[89]|20)\d\d)?(?:'s)?\s*,?\s*$"
    r"|(?P<abbr>\b(?:ipc|crpc|cpc|mofa|ibc))(?:'s)?\s*,?\s*$",
    re.IGNORECASE,
)
_EXT_BEFORE_WORDS = ("act", "code", "ipc", "cpc", "mofa", "ibc")
_EXT_RULES_AFTER = re.compile(
    r"\s*,?\s*(?:of|under|in)\s+(?:the\s+)?(?P<name>(?:[\w&.'()-]+\s+){1,6}?)rules\b",
    re.IGNORECASE,
)
_EXT_RULES_NAME = re.compile(
    r"compan|income|tax|gst|civil|criminal|service|conduct|pension|electricity", re.IGNORECASE
)
_RERA_NAME = re.compile(
    r"rera|real\s+estate|regulation\s+and\s+development|^\s*(?:central|principal|parent|main|"
    r"said|this|2016)\s*$",
    re.IGNORECASE,
)
_NAME_STOP = word_set(
    "the this that said these those a an its his her their for with by to per under context "
    "purpose purposes terms light"
)
_RERA_PREV = word_set(
    "the this said central rera principal parent main development development) 2016"
)

# -- which state a rule, form or annexure belongs to
_BEFORE_GAP = re.compile(
    r"(?:'s|s'|')?(?:\s+(?:rera|real\s+estate|general|draft|state|government))*"
    r"(?:\s+rules?(?:\s*,?\s*(?:19|20)\d\d)?)?\s*[,:—-]?\s*",
    re.IGNORECASE,
)
_AFTER_GAP = re.compile(
    r"\s*,?\s*(?:of|in|under|from|for|as\s+per)\s+(?:the\s+)?"
    r"(?:(?:(?:rera|general|draft)\s+)*rules?\s+(?:of|in|for)\s+(?:the\s+)?)?"
    r"(?:(?:state|ut|union\s+territory|government)\s+of\s+)?",
    re.IGNORECASE,
)
_ATTACH_WINDOW = 80

# -- mentions of the RERA Act itself
_ACT_MENTION = re.compile(
    r"\b(?:the|this|said)\s+act\b(?!\s+of\s+[a-z])"
    r"|\brera\s+act\b|\bcentral\s+(?:rera\s+)?act\b"
    r"|\breal\s+estate\s*\(?\s*regulation\s+and\s+development\s*\)?\s*act\b"
    r"|\bact\s+of\s+2016\b|\b2016\s+act\b",
    re.IGNORECASE,
)


def act_mentions(text: str) -> list[tuple[int, int]]:
    """The spans where ``text`` names the RERA Act itself."""
    return [m.span() for m in _ACT_MENTION.finditer(text)]


def _norm_number(number: str) -> str:
    return number.upper()


def _norm_token(token: str) -> str:
    inner = re.sub(r"[\s()]", "", token)
    return f"({inner.upper() if inner[:1].isdigit() else inner.lower()})"


def _paths(value: str | None) -> list[str]:
    return [_norm_token(t) for t in _BARE_OR_PAREN_RE.findall(value or "")]


def _expand(numbers: str) -> list[tuple[str, tuple[str, ...]]]:
    """``12, 14 and 18`` / ``12 to 14`` / ``18(2)(a)`` into (number, path) items."""
    items: list[tuple[str, tuple[str, ...]]] = []
    previous_end = 0
    for match in _ITEM_RE.finditer(numbers):
        number = _norm_number(match.group("num"))
        path = tuple(_norm_token(t) for t in _PAREN_RE.findall(match.group("path")))
        gap = numbers[previous_end : match.start()]
        previous_end = match.end()
        if items and _RANGE_SEP.search(gap) and not path and not items[-1][1]:
            low, high = items[-1][0], number
            if low.isdigit() and high.isdigit() and 0 < int(high) - int(low) <= _MAX_RANGE:
                items.extend((str(n), ()) for n in range(int(low) + 1, int(high) + 1))
                continue
        items.append((number, path))
    return items


def _is_external_section(text: str, start: int, end: int) -> bool:
    """``section 5 of the Companies Act``, ``section 420 IPC``, ``Companies Act section 5``."""
    after = text[end : end + 120]
    if _EXT_ABBR_AFTER.match(after):
        return True
    ext = _EXT_AFTER.match(after)
    if ext:
        name = ext.group("name").strip()
        words = name.lower().split()
        if not any(w in _NAME_STOP for w in words):
            if not name:
                return ext.group("kw").lower() != "act"  # "the Act" is RERA, "the Code" is not
            if not _RERA_NAME.search(name):
                return True
    window = text[max(0, start - 80) : start]
    lowered = window.lower()
    if not any(word in lowered for word in _EXT_BEFORE_WORDS):
        return False
    before = _EXT_BEFORE.search(window)
    if before:
        if before.group("abbr"):
            return True
        prev = (before.group("prev") or "").lower()
        if before.group("kw").lower() == "code":
            return True
        return bool(prev) and prev not in _RERA_PREV and not _RERA_NAME.search(prev)
    return False


def _is_external_rule(text: str, end: int) -> bool:
    """``rule 3 of the Companies (Incorporation) Rules, 2014``."""
    ext = _EXT_RULES_AFTER.match(text[end : end + 120])
    return bool(ext and _EXT_RULES_NAME.search(ext.group("name")))


def _attached_place(text: str, start: int, end: int, places: Sequence[PlaceMention]) -> str | None:
    """The state named right after (``rule 16 of the Gujarat rules``, ``rule 16 in Gujarat``) or
    right before (``Gujarat rule 16``, ``Chandigarh's rule 15``) a reference."""
    for mention in places:
        if end <= mention.start <= end + _ATTACH_WINDOW and _AFTER_GAP.fullmatch(
            text, end, mention.start
        ):
            return mention.place.code
    for mention in reversed(places):
        if start - _ATTACH_WINDOW <= mention.end <= start and _BEFORE_GAP.fullmatch(
            text, mention.end, start
        ):
            return mention.place.code
    return None


def _form_id_ok(text: str, match: re.Match[str]) -> bool:
    ident = match.group("id")
    if ident.isdigit() or match.group("q") or match.group("sep"):
        return True
    if len(ident) == 2:
        return ident.isupper()
    after = text[match.end() :]
    if ident.isupper():
        return not (ident == "I" and _PRONOUN_I.match(after))  # "which form I need"
    return _LOWER_FORM_OK.match(after) is not None  # "form a?" yes, "form a company" no


def find_references(
    text: str, places: Sequence[PlaceMention]
) -> list[tuple[ExplicitReference, bool]]:
    """References with ``attached``: whether their jurisdiction was stated next to them."""
    found: list[tuple[str, str, tuple[str, ...], str | None, bool, int, int]] = []
    taken: list[tuple[int, int]] = []
    if _DIGIT.search(text):
        for match in _REF_RE.finditer(text):
            kw = match.group("kw").lower()
            kind = "rule" if kw.startswith("r") else "section"
            start, end = match.span()
            taken.append((start, end))
            if kind == "section" and _is_external_section(text, start, end):
                continue
            if kind == "rule" and _is_external_rule(text, end):
                continue
            chain = [
                level
                for level in (
                    _paths(match.group("sub")),
                    _paths(match.group("clause")),
                    _paths(match.group("subclause")),
                )
                if level
            ]
            if kind == "section":
                jurisdiction: str | None = "CENTRAL"
                attached = True
            else:
                jurisdiction = _attached_place(text, start, end, places)
                attached = jurisdiction is not None
            for number, inline in _expand(match.group("numbers")):
                paths: list[tuple[str, ...]] = [inline]
                for level in chain:
                    paths = [(*p, item) for p in paths for item in level][:_MAX_PATHS]
                for path in paths:
                    found.append((kind, number, path, jurisdiction, attached, start, end))
        for match in _FAQ_RE.finditer(text):
            taken.append(match.span())
            found.append(
                ("question", match.group("n"), (), "CENTRAL", True, match.start(), match.end())
            )
        if _FAQ_WORD.search(text):
            for match in _FAQ_QUESTION_RE.finditer(text):
                if any(s < match.end() and match.start() < e for s, e in taken):
                    continue
                found.append(
                    ("question", match.group("n"), (), "CENTRAL", True, match.start(), match.end())
                )
    lowered = text.lower()
    if "form" in lowered:
        for match in _FORM_RE.finditer(text):
            if not _form_id_ok(text, match):
                continue
            ids = [match.group("id").upper()]
            end = match.end()
            if match.group("kw").lower() == "forms":
                while more := _FORM_MORE.match(text, end):
                    ids.append(more.group(2))
                    end = more.end()
            place = _attached_place(text, match.start(), end, places)
            for ident in ids:
                found.append(("form", ident, (), place, place is not None, match.start(), end))
    if "annex" in lowered:
        for match in _ANNEXURE_RE.finditer(text):
            ident = match.group("id")
            if (
                len(ident) > 1
                and not ident.isdigit()
                and not (ident.isupper() and (len(ident) == 2 or _ROMAN.fullmatch(ident)))
            ):
                continue  # "annexure is", "annexure form"
            place = _attached_place(text, match.start(), match.end(), places)
            found.append(("annexure", ident.upper(), (), place, place is not None, *match.span()))
    clauses = _clauses(text, places)
    clause_spans = [(ref.start, ref.end) for ref, _ in clauses]
    found = [f for f in found if not any(s < f[6] and f[5] < e for s, e in clause_spans)]
    found.sort(key=lambda item: (item[5], item[0]))
    out: list[tuple[ExplicitReference, bool]] = []
    for kind, number, path, jurisdiction, attached, start, end in found:
        label = f"{_KIND_WORD[kind]} {number}{''.join(path)}"
        ref = ExplicitReference(
            kind, number, path, label, jurisdiction, text[start:end], start, end
        )  # fmt: skip
        out.append((ref, attached))
    return sorted(out + clauses, key=lambda item: item[0].start)


def _clauses(text: str, places: Sequence[PlaceMention]) -> list[tuple[ExplicitReference, bool]]:
    """A form's own numbered paragraphs the question names (``clause 12 of the agreement for
    sale``: the model agreement of the state named, or of every state; ``para 3 of Annexure
    A``), labelled as the structure labels them (``ingest.paragraph_word``)."""
    out: list[tuple[ExplicitReference, bool]] = []
    if not _DIGIT.search(text):
        return out
    for match in _CLAUSE_RE.finditer(text):
        ident = match.group("id")
        if match.group("agreement"):
            form = AGREEMENT_CLAUSE
        elif ident and (ident.isupper() or ident.isdigit()):
            form = f"{'Form' if match.group('kind').lower() == 'form' else 'Annexure'} {ident}"
        else:
            continue  # "para 3 of form is": no form named
        number = int(match.group("n"))
        place = _attached_place(text, match.start(), match.end(), places)
        ref = ExplicitReference("clause", str(number), (), form + paragraph_word(number), place,
                                match.group(), *match.span())  # fmt: skip
        out.append((ref, place is not None))
    return out
