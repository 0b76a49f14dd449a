"""Understanding a user's question: validation, explicit references, jurisdictions and intents.

Pure domain code (no Dagster, no database) on the query hot path: every pattern is compiled once
at import, and :func:`understand` works on the one canonical form of the question
(:func:`civicsetu_pipelines.base.canonical.canonicalize`), so offsets in the result index
``Query.text``.

* :func:`validate_question` -- text in, canonical text out, or a :class:`QuestionError` whose
  ``code`` says what was wrong (``empty``, ``too_long``, ``binary``); the message shows at most
  60 characters of the input.
* :func:`parse_jurisdictions`, :func:`parse_as_of`, :func:`parse_top_k` -- the other inputs of a
  query (codes ``bad_jurisdiction``, ``bad_date``, ``bad_top_k``).
* :func:`understand` -- the :class:`Query`: explicit references (``Section 18(2)``, ``Rule 16`` of
  Gujarat, ``Form N``, ``Annexure A``, FAQ ``Question 5``), the jurisdictions and other Indian
  places it names, intents, full-text search terms and a prompt-injection flag.
* :func:`is_vague` and :func:`question_hash` (logs record the hash and length, never the text).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from functools import lru_cache
from typing import NamedTuple

from civicsetu_pipelines.base.canonical import canonicalize

MAX_QUESTION_CHARS = 2000
MAX_TOP_K = 50
_PREVIEW_CHARS = 60
_JUNK_SHARE = 0.10  # more than this share of junk characters makes a question binary

ERROR_CODES = frozenset(
    {"empty", "too_long", "binary", "bad_jurisdiction", "bad_date", "bad_top_k"}
)
INTENTS = frozenset(
    {"cross_reference", "penalty", "implementation", "comparison", "temporal", "definition"}
)


class QuestionError(ValueError):
    """Bad input to the question answering layer.

    ``code`` is one of ``empty``, ``too_long``, ``binary``, ``bad_jurisdiction``, ``bad_date``,
    ``bad_top_k``. The message names the input (never more than 60 characters of it) and says
    what is accepted.
    """

    code: str

    def __init__(self, code: str, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown QuestionError code {code!r}")
        super().__init__(message)
        self.code = code

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.code, str(self)))


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _preview(value: str) -> str:
    """``repr`` of at most the first 60 characters of ``value`` ("..." marks a cut)."""
    if len(value) <= _PREVIEW_CHARS:
        return repr(value)
    return repr(value[:_PREVIEW_CHARS]) + "..."


# ---------------------------------------------------------------------------------------------
# Input validation

_EXAMPLE = "e.g. 'What does section 18 say about refunds?'"
_ASCII_JUNK = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ASCII_LETTER = re.compile(r"[A-Za-z]")
_JUNK_CATEGORIES = frozenset({"Cc", "Cn", "Co", "Cs"})
_SAFE_CONTROLS = frozenset("\t\n\r")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _binary_reason(text: str) -> str | None:
    """Why ``text`` is not a question in words, or None when it is."""
    if "\x00" in text:
        return "it contains NUL bytes"
    if _SURROGATE.search(text):
        return "it contains lone surrogates (not valid Unicode text)"
    if text.isascii():
        junk = len(_ASCII_JUNK.findall(text))
        letters = _ASCII_LETTER.search(text) is not None
    else:
        junk = 0
        letters = False
        for ch in text:
            category = unicodedata.category(ch)
            if category[0] == "L":
                letters = True
            elif ch == "\ufffd" or (category in _JUNK_CATEGORIES and ch not in _SAFE_CONTROLS):
                junk += 1
    if junk > _JUNK_SHARE * len(text):
        return (
            f"{junk} of its {len(text)} characters are control, unassigned, private-use or "
            "replacement characters"
        )
    if not letters and "\u00a7" not in text:  # "§ 18" names a section
        return "it contains no letters"
    return None


def _validate(value: object) -> tuple[str, int]:
    """(canonical question, raw length in characters)."""
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        try:
            value = data.decode("utf-8")
        except UnicodeDecodeError:
            raise QuestionError(
                "binary",
                f"question {data[:_PREVIEW_CHARS]!r} is bytes that are not valid UTF-8; "
                f"send the question as text, {_EXAMPLE}",
            ) from None
    if not isinstance(value, str):
        raise QuestionError(
            "binary",
            f"question must be text (str or UTF-8 bytes), got {type(value).__name__}; {_EXAMPLE}",
        )
    raw_length = len(value)
    if not value.strip():
        raise QuestionError(
            "empty", f"question {_preview(value)} is empty; ask a question in words, {_EXAMPLE}"
        )
    if raw_length > MAX_QUESTION_CHARS:
        raise QuestionError(
            "too_long",
            f"question {_preview(value)} is {raw_length} characters long; at most "
            f"{MAX_QUESTION_CHARS} characters are accepted",
        )
    text = canonicalize(value)
    if not text:  # only invisible characters
        raise QuestionError(
            "empty", f"question {_preview(value)} is empty; ask a question in words, {_EXAMPLE}"
        )
    reason = _binary_reason(value)
    if reason:
        raise QuestionError(
            "binary",
            f"question {_preview(value)} does not look like text: {reason}; ask a question in "
            f"words, {_EXAMPLE}",
        )
    return text, raw_length


def validate_question(value: object) -> str:
    """Return the canonical form of a question, or raise :class:`QuestionError`.

    * not ``str`` (bytes are decoded as UTF-8 first) -> ``binary``;
    * empty or white space only -> ``empty``;
    * more than :data:`MAX_QUESTION_CHARS` characters, counted before canonicalization ->
      ``too_long``;
    * binary junk: NUL bytes, lone surrogates, more than 10% control / unassigned /
      private-use / U+FFFD replacement characters, or no letter at all -> ``binary``.

    Text in any script is a question (Hindi and Kannada have letters); SQL or markup in it is
    just text.
    """
    return _validate(value)[0]


# ---------------------------------------------------------------------------------------------
# Jurisdictions and places


class _Place(NamedTuple):
    code: str  # UPPER_SNAKE, like the registry's Jurisdiction values
    display: str


# Indian states and union territories: display name and other spellings people write.
_PLACES: dict[str, tuple[str, ...]] = {
    "Andhra Pradesh": (),
    "Arunachal Pradesh": (),
    "Assam": (),
    "Bihar": (),
    "Chhattisgarh": ("Chattisgarh", "Chhatisgarh"),
    "Goa": (),
    "Gujarat": ("Gujrat",),
    "Haryana": (),
    "Himachal Pradesh": (),
    "Jharkhand": (),
    "Karnataka": (),
    "Kerala": (),
    "Madhya Pradesh": (),
    "Maharashtra": ("Maharastra",),
    "Manipur": (),
    "Meghalaya": (),
    "Mizoram": (),
    "Nagaland": (),
    "Odisha": ("Orissa",),
    "Punjab": (),
    "Rajasthan": (),
    "Sikkim": (),
    "Tamil Nadu": ("Tamilnadu",),
    "Telangana": (),
    "Tripura": (),
    "Uttar Pradesh": (),
    "Uttarakhand": ("Uttaranchal",),
    "West Bengal": (),
    "Andaman and Nicobar Islands": ("Andaman and Nicobar", "Andaman"),
    "Chandigarh": (),
    "Dadra and Nagar Haveli and Daman and Diu": (
        "Dadra and Nagar Haveli",
        "Daman and Diu",
    ),
    "Delhi": ("New Delhi", "NCT of Delhi"),
    "Jammu and Kashmir": ("J&K", "J & K"),
    "Ladakh": (),
    "Lakshadweep": (),
    "Puducherry": ("Pondicherry",),
}


def _code(name: str) -> str:
    return re.sub(r"[\s_-]+", "_", name.strip().replace("&", " and ")).upper()


_PLACE_BY_KEY: dict[str, _Place] = {}
_PLACE_ALTERNATIVES: list[str] = []
for _display, _aliases in _PLACES.items():
    _place = _Place(_code(_display), _display)
    for _name in (_display, *_aliases):
        _PLACE_BY_KEY[_code(_name)] = _place
        _PLACE_ALTERNATIVES.append(_name)
_PLACE_BY_KEY["UP"] = _PLACE_BY_KEY["UTTAR_PRADESH"]  # accepted as a jurisdiction argument only
_PLACE_BY_CODE: dict[str, _Place] = {p.code: p for p in _PLACE_BY_KEY.values()}
_JURISDICTION_ALIASES = {"CENTRE": "CENTRAL", "CENTER": "CENTRAL", "UNION": "CENTRAL"}


def _place_regex(name: str) -> str:
    parts = re.split(r"(\s+|&)", name)
    out = []
    for part in parts:
        if not part:
            continue
        if part.isspace():
            out.append(r"\s*" if "&" in name else r"\s+")
        elif part == "&" or part.lower() == "and":
            out.append(r"(?:and|&)")
        else:
            out.append(re.escape(part))
    return "".join(out)


_PLACE_FIRST = "".join(sorted({n[0].lower() for n in _PLACE_ALTERNATIVES} | {"u"}))
_PLACE_RE = re.compile(
    rf"(?<![\w&])(?=[{_PLACE_FIRST}])(?:"
    + "|".join(_place_regex(n) for n in sorted(_PLACE_ALTERNATIVES, key=len, reverse=True))
    + r"|(?-i:U\.\s?P\.))(?![\w&])",
    re.IGNORECASE,
)


def _place_of(matched: str) -> _Place:
    key = _code(re.sub(r"\s+", " ", matched))
    if key.replace(".", "").replace("_", "") == "UP":
        return _PLACE_BY_CODE["UTTAR_PRADESH"]
    return _PLACE_BY_KEY[key]


@lru_cache(maxsize=64)
def _known_index(known: tuple[str, ...]) -> dict[str, str]:
    """Normalized key -> the caller's own spelling of each known jurisdiction."""
    return {_code(str(k)): str(k) for k in known}


def _jurisdiction_key(value: str) -> str:
    key = _code(value)
    key = _JURISDICTION_ALIASES.get(key, key)
    place = _PLACE_BY_KEY.get(key)
    return place.code if place else key


def parse_jurisdictions(values: Sequence[str] | str | None, known: Sequence[str]) -> list[str]:
    """The jurisdictions asked for, as spelled in ``known``; de-duplicated, order kept.

    Case-insensitive; spaces, hyphens and underscores are alike (``"uttar pradesh"``,
    ``"Uttar_Pradesh"``); one string or items may hold several names separated by commas.
    ``None`` or nothing -> ``[]`` (no restriction). An unknown name -> ``bad_jurisdiction``
    naming it and listing the valid ones.
    """
    if values is None:
        return []
    items = [values] if isinstance(values, str) else list(values)
    index = _known_index(tuple(str(k) for k in known))
    valid = ", ".join(sorted(index.values())) or "(none)"
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise QuestionError(
                "bad_jurisdiction",
                f"jurisdiction must be a name, got {type(item).__name__}; valid: {valid}",
            )
        names = [n for n in item.split(",") if n.strip()] if "," in item else [item]
        for name in names:
            key = _jurisdiction_key(name)
            if key in index:
                if index[key] not in out:
                    out.append(index[key])
                continue
            place = _PLACE_BY_CODE.get(key)
            why = (
                f"{place.display} has no documents in this corpus"
                if place
                else "not a known jurisdiction"
            )
            raise QuestionError(
                "bad_jurisdiction",
                f"unknown jurisdiction {_preview(name)} ({why}); valid: {valid} "
                "(case-insensitive, e.g. 'gujarat' or 'Uttar Pradesh')",
            )
    return out


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_as_of(value: str | date | None) -> date | None:
    """``None`` -> None; a ``date`` as is; a string must be an ISO date ``YYYY-MM-DD``.

    Anything else (``2024-13-01``, ``yesterday``, ``01/02/2024``, a datetime) -> ``bad_date``.
    """
    if value is None:
        return None
    accepted = "use an ISO date YYYY-MM-DD, e.g. 2024-01-31"
    if isinstance(value, datetime):
        raise QuestionError(
            "bad_date", f"as_of {_preview(value.isoformat())} is a date and time; {accepted}"
        )
    if isinstance(value, date):
        return value
    if not isinstance(value, str):
        raise QuestionError(
            "bad_date", f"as_of must be a date string, got {type(value).__name__}; {accepted}"
        )
    text = value.strip()
    if _ISO_DATE.fullmatch(text):
        try:
            return date.fromisoformat(text)
        except ValueError:
            raise QuestionError(
                "bad_date", f"as_of {_preview(value)} is not a valid calendar date; {accepted}"
            ) from None
    raise QuestionError("bad_date", f"as_of {_preview(value)} is not a date; {accepted}")


def parse_top_k(value: int) -> int:
    """A whole number from 1 to 50 (not a bool, not a string) else ``bad_top_k``."""
    if isinstance(value, bool) or not isinstance(value, int):
        shown = _preview(value) if isinstance(value, str) else repr(value)[:_PREVIEW_CHARS]
        raise QuestionError(
            "bad_top_k",
            f"top_k must be a whole number from 1 to {MAX_TOP_K}, got {shown} "
            f"({type(value).__name__})",
        )
    if not 1 <= value <= MAX_TOP_K:
        raise QuestionError(
            "bad_top_k", f"top_k {value} is out of range; use a whole number from 1 to {MAX_TOP_K}"
        )
    return value


# ---------------------------------------------------------------------------------------------
# Explicit references


@dataclass(frozen=True)
class ExplicitReference:
    """One provision the question names, as written (offsets index ``Query.text``)."""

    kind: str  # section | rule | form | annexure | question
    number: str  # "18", "4A", "N", "A", "5"
    path: tuple[str, ...]  # ("(2)",) or ("(2)", "(a)")
    label: str  # "Section 18(2)", "Rule 16", "Form N", "Annexure A", "Question 5"
    jurisdiction: str | None  # "CENTRAL" for sections and FAQ questions; a state code; None
    phrase: str
    start: int
    end: int


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
_NAME_STOP = _words(
    "the this that said these those a an its his her their for with by to per under context "
    "purpose purposes terms light"
)
_RERA_PREV = _words(
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


class _Mention(NamedTuple):
    start: int
    end: int
    place: _Place


def _attached_place(text: str, start: int, end: int, places: Sequence[_Mention]) -> str | None:
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


def _find_references(text: str, places: Sequence[_Mention]) -> list[tuple[ExplicitReference, bool]]:
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
    found.sort(key=lambda item: (item[5], item[0]))
    out: list[tuple[ExplicitReference, bool]] = []
    for kind, number, path, jurisdiction, attached, start, end in found:
        label = f"{_KIND_WORD[kind]} {number}{''.join(path)}"
        ref = ExplicitReference(
            kind, number, path, label, jurisdiction, text[start:end], start, end
        )  # fmt: skip
        out.append((ref, attached))
    return out


# ---------------------------------------------------------------------------------------------
# Intents, terms, injection


def _any(*patterns: str) -> re.Pattern[str]:
    """One case-insensitive pattern; those that start a word are tried only at word starts
    (four times faster than a plain alternation on a typical question)."""
    at_word = [p.removeprefix(r"\b") for p in patterns if p.startswith(r"\b")]
    others = [p for p in patterns if not p.startswith(r"\b")]
    parts = [r"(?<!\w)(?=\w)(?:" + "|".join(at_word) + ")"] if at_word else []
    return re.compile("|".join(parts + others), re.IGNORECASE)


_INTENT_PATTERNS: dict[str, re.Pattern[str]] = {
    "cross_reference": _any(
        r"\brefer(?:s|red|ring)?\s+(?:to|back)\b",
        r"\breferenc(?:e|es|ed|ing)\b",
        r"\bcross[- ]?ref",
        r"\brelated\s+(?:provisions?|sections?|rules?)\b",
        r"\brelat(?:e|es|ed|ing)\s+to\s+(?:section|rule|s\.|§)",
        r"\b(?:which|what)\s+(?:other\s+)?(?:sections?|rules?|provisions?)\s+"
        r"(?:mention|cite|refer|invoke|link|point|rely)",
        r"\bmention(?:s|ed)?\s+(?:section|rule)",
        r"\bcite[sd]?\b",
        r"\blinked\s+to\b",
    ),
    "penalty": _any(
        r"\bpenal(?:ty|ties|ised|ized|ise|ize|ising|izing)?\b",
        r"\bfine[sd]?\b",
        r"\bpunish",
        r"\bimprison",
        r"\bcompound(?:ing|ed|able)?\b",
        r"\bcontraven",
        r"\bprosecut",
        r"\boffen[cs]es?\b",
        r"\bjail\b",
    ),
    "implementation": _any(
        r"\bimplement",
        r"\bwhich\s+(?:state\s+)?rules?\b",
        r"\bunder\s+which\s+(?:section|rule|provision|power)",
        r"\bderived?\s+from\b",
        r"\b(?:made|framed|notified|issued)\s+under\b",
        r"\bgives?\s+effect\s+to\b",
        r"\bcorresponding\s+(?:state\s+)?rules?\b",
        r"\boperationali[sz]",
        r"\brules?\s+for\s+section\b",
    ),
    "comparison": _any(
        r"\bcompar",
        r"\bdiffer",
        r"\bversus\b",
        r"\bvs\b\.?",
        r"\bcontrast\b",
        r"\bsimilar(?:ity|ities|ly)?\b",
    ),
    "temporal": _any(
        r"^\W*when\b",
        r"\bwhen\s+(?:did|does|do|is|was|were|will|are|can|could|should|must|would|has|have"
        r"|had|shall)\b",
        r"\b(?:by|since|from|till|until)\s+when\b",
        r"\bdate[sd]?\b",
        r"\bcommenc",
        r"\b(?:in|into)\s+force\b",
        r"\beffective\b",
        r"\bas\s+(?:of|on)\b",
        r"\b(?:before|after|since|until|till|from|by|in|during)\s+(?:\d{1,2}\s+[a-z]+,?\s+)?"
        r"(?:1[89]|20)\d\d\b",
        r"\b(?:before|after|since|until|till|from|by|on)\s+\d{4}-\d{2}-\d{2}\b",
        r"\bwithin\s+(?:a\s+period\s+of\s+)?(?:\d+|[a-z]+(?:[- ][a-z]+)?)\s+(?:working\s+)?"
        r"(?:days?|weeks?|months?|years?)\b",
        r"\bhow\s+long\b",
        r"\bhow\s+many\s+(?:days|weeks|months|years)\b",
        r"\btime\s*(?:limit|line|frame)",
        r"\bdeadlines?\b",
        r"\blast\s+date\b",
        r"\bexpir",
        r"\bamend(?:ed|ment|ments)\b",
    ),
    "definition": _any(
        r"\bmean(?:s|ing|ings|t)?\b",
        r"\bdefin(?:e|ed|es|ition|itions)\b",
        r"\bstands?\s+for\b",
        r"\binterpret",
        r"^\W*(?:what|who)\s+(?:is|are|'s)\s+(?:an?\s+|the\s+)?(?:[\w'\"()-]+\s+){0,3}"
        r"[\w'\"()-]+\W*$",
    ),
}
_BOTH_OR_BETWEEN = re.compile(r"\b(?:both|between)\b", re.IGNORECASE)

_INJECTION = _any(
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|my|these|those|"
    r"every|of)\s+)*(?:(?:previous|prior|above|earlier|preceding|system|original|initial|"
    r"existing|safety)\s+)?(?:instructions?|prompts?|directions|guidelines|guardrails|"
    r"messages?|constraints|restrictions)\b",
    r"\b(?:ignore|disregard|forget)\s+(?:(?:all|the|your|of)\s+)*(?:previous|prior|above|"
    r"earlier|preceding|everything)\b",
    r"\bsystem\s*prompt",
    r"\byou\s+are\s+now\b",
    r"\bact\s+as\s+(?:if|though|my|dan\b|an?\s+(?:\w+\s+)?(?:ai|assistant|chatbot|bot|model|llm"
    r"|gpt|hacker|dan)\b)",
    r"\bjail\s*break",
    r"\bdeveloper\s+mode\b",
    r"\bdan\s+mode\b",
    r"\bdo\s+anything\s+now\b",
    r"\breveal\s+(?:your|the)\s+(?:\w+\s+)?(?:prompt|instructions|rules|secrets?|"
    r"configuration|keys?|password)",
    r"\b(?:print|show|repeat|output|dump)\s+(?:me\s+)?(?:your|the)\s+(?:\w+\s+)?"
    r"(?:prompt|instructions)\b",
    r"<\|",
    r"\|>",
    r"#{2,}\s*(?:instruction|system|response)",
    r"\[/?inst\]",
    r"<<\s*sys\s*>>",
    r"</?\s*(?:system|assistant|user)\s*>",
    r"\bnew\s+instructions\b",
    r"\bpretend\s+(?:to\s+be|you\s+are|you're)\b",
    r"\bfrom\s+now\s+on\s+you\b",
    r"\bno\s+longer\s+bound\b",
)

STOP_WORDS = _words(
    """
    a about above after again against all also am an and any anyone anything are as at be
    because been before being below between both but by can cannot could did do does doing done
    don down during each either else ever every everything few for from further get gets getting
    give given go goes going got had has have having he her here hers herself him himself his how
    i if in into is isn it its itself just kindly know let lets like likely many may maybe me
    might mine more most much must my myself need needs neither no nor not now of off on once one
    only
    or other others otherwise our ours ourselves out over own per please rather really regarding
    said same say says see shall she should show since so some someone something such sure tell
    than thank thanks that the their theirs them themselves then there these they thing things
    this those though through thus to too under until up upon us very via want wants was way we
    were what whatever when whenever where whereas whether which while who whom whose why will
    with within without would yes yet you your yours yourself yourselves explain describe
    hello hi hey dear sir madam help answer question questions ok okay
    section sections sec secs ss rule rules act acts law laws provision provisions clause clauses
    sub subsection subsections chapter chapters regulation regulations rera statute statutes
    """
)
GENERIC_TERMS = _words(
    """
    rules rule law laws act acts everything anything something tell explain details detail
    information info help about overview summary general thing things stuff it this that all
    more provisions provision section sections rera question questions
    """
)
_TERM_RE = re.compile(r"(?:[^\W_]|[\u0900-\u0963\u0966-\u0dff])+")


@dataclass(frozen=True)
class Query:
    """What a question asks, as far as words can tell."""

    text: str  # canonical question
    length: int  # raw length in characters
    references: tuple[ExplicitReference, ...]
    jurisdictions: tuple[str, ...]  # known jurisdictions mentioned, in order, as spelled in known
    other_places: tuple[str, ...]  # Indian states/UTs mentioned that are not known ("Kerala")
    intents: frozenset[str]
    terms: tuple[str, ...]
    injection: bool


def _inside(position: int, spans: Sequence[tuple[int, int]]) -> int:
    for index, (start, end) in enumerate(spans):
        if start <= position < end:
            return index
    return -1


def _terms(
    text: str,
    references: Sequence[ExplicitReference],
    skip: Sequence[tuple[int, int]],
) -> tuple[str, ...]:
    ref_spans = [(r.start, r.end) for r in references]
    emitted: set[int] = set()
    out: dict[str, None] = {}
    lowered = text.lower()
    for match in _TERM_RE.finditer(lowered):
        position = match.start()
        index = _inside(position, ref_spans) if ref_spans else -1
        if index >= 0:
            span = ref_spans[index]
            if index not in emitted:
                emitted.add(index)
                for ref in references:
                    if (ref.start, ref.end) == span:
                        out.setdefault(ref.kind, None)
                        out.setdefault(ref.number.lower(), None)
                        for item in ref.path:
                            out.setdefault(item.strip("()").lower(), None)
            continue
        if skip and _inside(position, skip) >= 0:
            continue
        word = match.group()
        if word[0].isdigit() or word in STOP_WORDS or (len(word) == 1 and word.isascii()):
            continue
        out.setdefault(word, None)
    return tuple(out)


def understand(question: object, *, known_jurisdictions: Sequence[str]) -> Query:
    """Validate ``question`` (see :func:`validate_question`) and read what it asks."""
    text, length = _validate(question)
    known = _known_index(tuple(known_jurisdictions))
    places = [_Mention(m.start(), m.end(), _place_of(m.group())) for m in _PLACE_RE.finditer(text)]
    act_mentions = [m.span() for m in _ACT_MENTION.finditer(text)]

    found = _find_references(text, places)
    state_codes = {m.place.code for m in places}
    only_state = next(iter(state_codes)) if len(state_codes) == 1 else None
    references: list[ExplicitReference] = []
    seen: set[tuple[str, str, tuple[str, ...], str | None]] = set()
    for ref, attached in found:
        if not attached and only_state is not None:
            ref = dataclasses.replace(ref, jurisdiction=only_state)
        key = (ref.kind, ref.number, ref.path, ref.jurisdiction)
        if key not in seen:  # the same provision named twice is one reference
            seen.add(key)
            references.append(ref)

    # Jurisdictions in order of first appearance; CENTRAL from the Act or a section / FAQ.
    events: list[tuple[int, str]] = [(m.start, m.place.code) for m in places]
    events += [(start, "CENTRAL") for start, _ in act_mentions]
    events += [(r.start, "CENTRAL") for r in references if r.jurisdiction == "CENTRAL"]
    events.sort()
    jurisdictions: dict[str, None] = {}
    other_places: dict[str, None] = {}
    mentioned: set[str] = set()
    for _, code in events:
        mentioned.add(code)
        if code in known:
            jurisdictions.setdefault(known[code], None)
        elif code in _PLACE_BY_CODE:
            other_places.setdefault(_PLACE_BY_CODE[code].display, None)

    intents = {name for name, pattern in _INTENT_PATTERNS.items() if pattern.search(text)}
    if len(mentioned) >= 2 and _BOTH_OR_BETWEEN.search(text):
        intents.add("comparison")

    skip = [(m.start, m.end) for m in places] + act_mentions
    return Query(
        text=text,
        length=length,
        references=tuple(references),
        jurisdictions=tuple(jurisdictions),
        other_places=tuple(other_places),
        intents=frozenset(intents),
        terms=_terms(text, references, skip),
        injection=_INJECTION.search(text) is not None,
    )


def is_vague(query: Query) -> bool:
    """Too vague to answer: no explicit reference and, besides generic words ("rules", "tell",
    "explain", "everything", ...), fewer than two content terms -- one content term is enough
    when the question also shows an intent or names a jurisdiction ("What is a promoter?")."""
    if query.references:
        return False
    content = [t for t in query.terms if t not in GENERIC_TERMS]
    if len(content) >= 2:
        return False
    return not (content and (query.intents or query.jurisdictions))


def question_hash(question: str) -> str:
    """First 16 hex digits of the sha256 of the canonical question (for logs)."""
    canonical = canonicalize(question)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]
