"""Understanding a user's question: validation, jurisdictions, intents and search terms.

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
  Gujarat, ``Form N``, ``Annexure A``, FAQ ``Question 5``; found by
  :mod:`civicsetu_pipelines.answer.legal_references`), the jurisdictions and other Indian places it
  names (:mod:`civicsetu_pipelines.answer.places`), intents, full-text search terms and a
  prompt-injection flag.
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

from civicsetu_pipelines.answer.legal_references import (
    ExplicitReference,
    act_mentions,
    find_references,
    word_set,
)
from civicsetu_pipelines.answer.places import (
    PLACE_BY_CODE,
    jurisdiction_key,
    known_index,
    place_mentions,
)
from civicsetu_pipelines.answer.vocabulary import load_vocabulary
from civicsetu_pipelines.base import canonicalize
from civicsetu_pipelines.ingest import kinds_asked_for, whole_form

MAX_QUESTION_CHARS = 2000
MAX_TOP_K = 50
_PREVIEW_CHARS = 60
_JUNK_SHARE = 0.10  # more than this share of junk characters makes a question binary

ERROR_CODES = frozenset(
    {"empty", "too_long", "binary", "bad_jurisdiction", "bad_date", "bad_top_k", "bad_uri"}
)
INTENTS = frozenset(
    {"cross_reference", "penalty", "implementation", "comparison", "temporal", "definition"}
)


class QuestionError(ValueError):
    """Bad input to the question answering layer.

    ``code`` is one of ``empty``, ``too_long``, ``binary``, ``bad_jurisdiction``, ``bad_date``,
    ``bad_top_k``, ``bad_uri`` (an Akoma Ntoso URI naming no provision). The message names
    the input (never more than 60 characters of it) and says what is accepted.
    """

    code: str

    def __init__(self, code: str, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown QuestionError code {code!r}")
        super().__init__(message)
        self.code = code

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.code, str(self)))


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
# The other inputs: jurisdictions, date, top_k


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
    index = known_index(tuple(str(k) for k in known))
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
            key = jurisdiction_key(name)
            if key in index:
                if index[key] not in out:
                    out.append(index[key])
                continue
            place = PLACE_BY_CODE.get(key)
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
        # whether something falls within a term: "do web portals count as real estate agents?"
        r"\b(?:counts?|counted|qualif(?:y|ies|ied)|treated|regarded)\s+as\b",
        r"\bconsidered\s+(?:as|to\s+be)\b",
        r"\b(?:falls?|comes?)\s+(?:within|under)\s+the\s+(?:definition|meaning)\b",
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

STOP_WORDS = word_set(
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
GENERIC_TERMS = word_set(
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
    # The statute's words for the question's lay terms (data/vocabulary.yaml) and the question
    # rewritten in them (None when it holds no lay term): retrieved beside the question as asked.
    legal_terms: tuple[str, ...] = ()
    rewrite: str | None = None
    lay_terms: tuple[str, ...] = ()  # the lay words and phrases found, as written (lower case)
    asks_about: frozenset[str] = frozenset()  # kinds of document it names ("model agreement")
    named_day: date | None = None  # the day an expression URI in it names (its as-of date)

    @property
    def firm_references(self) -> tuple[ExplicitReference, ...]:
        """The references that name a provision for certain: every one but a clause of "the
        agreement", which may be the buyer's own (``ExplicitReference.soft``). Before its
        references are resolved, only these spare a question the checks of its words (too
        vague, a matter of the provisions table); after, ``verdict.as_named``."""
        return tuple(ref for ref in self.references if not ref.soft)


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
                        if ref.kind == "clause":  # the form it is of: "agreement", "annexure a"
                            for word in whole_form(ref.label).lower().split():
                                out.setdefault(word, None)
                            continue
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


_AKN_URI = re.compile(r"/akn/[^\s\"'<>]*[^\s\"'<>.,;:?!)]")


def _uri_references(text: str) -> tuple[list[ExplicitReference], date | None]:
    """The provisions the Akoma Ntoso URIs in ``text`` name (``/akn/in/act/2016/16/~sec_18``
    is Section 18 of the Act), as references spanning each URI, and the day the last
    expression URI names. :class:`QuestionError` ``bad_uri`` for one naming nothing."""
    if "/akn/" not in text:
        return [], None
    # cobalt is imported only for a question with a URI in it
    from civicsetu_pipelines.ingest import AknError, named_unit, registered_works

    out: list[ExplicitReference] = []
    day = None
    works = registered_works()
    for match in _AKN_URI.finditer(text):
        try:
            unit = named_unit(match.group())
        except AknError as exc:
            raise QuestionError("bad_uri", str(exc)) from None
        if unit.work not in works:  # another Act's section 10 is not the RERA Act's
            raise QuestionError(
                "bad_uri", f"{match.group()}: no registered document has the work URI {unit.work}"
            )
        label = f"{unit.kind.capitalize()} {unit.number}{''.join(unit.path)}"
        out.append(ExplicitReference(unit.kind, unit.number, unit.path, label,
                                     unit.jurisdiction, match.group(), *match.span()))  # fmt: skip
        day = unit.day or day
    return out, day


def understand(question: object, *, known_jurisdictions: Sequence[str]) -> Query:
    """Validate ``question`` (see :func:`validate_question`) and read what it asks. An Akoma
    Ntoso URI in it (``/akn/in/act/2016/16/~sec_18__subsec_1``) is a reference to the unit it
    names, and an expression URI's day is the question's as-of date unless one is given."""
    text, length = _validate(question)
    known = known_index(tuple(known_jurisdictions))
    named, named_day = _uri_references(text)
    reading_text = _AKN_URI.sub(lambda m: " " * len(m.group()), text) if named else text
    places = place_mentions(reading_text)
    act_spans = act_mentions(reading_text)

    found = [(ref, True) for ref in named] + find_references(reading_text, places)
    state_codes = {m.place.code for m in places}
    only_state = next(iter(state_codes)) if len(state_codes) == 1 else None
    references: list[ExplicitReference] = []
    seen: set[tuple[str, str, str | None]] = set()
    for ref, attached in found:
        if not attached and only_state is not None:
            ref = dataclasses.replace(ref, jurisdiction=only_state)
        key = (ref.kind, ref.label, ref.jurisdiction)  # a label spells its number and path
        if key not in seen:  # the same provision named twice is one reference
            seen.add(key)
            references.append(ref)

    # Jurisdictions in order of first appearance; CENTRAL from the Act or a section / FAQ.
    events: list[tuple[int, str]] = [(m.start, m.place.code) for m in places]
    events += [(start, "CENTRAL") for start, _ in act_spans]
    events += [(r.start, "CENTRAL") for r in references if r.jurisdiction == "CENTRAL"]
    events += [(r.start, str(r.jurisdiction)) for r in named if r.jurisdiction != "CENTRAL"]
    events.sort()
    jurisdictions: dict[str, None] = {}
    other_places: dict[str, None] = {}
    mentioned: set[str] = set()
    for _, code in events:
        mentioned.add(code)
        if code in known:
            jurisdictions.setdefault(known[code], None)
        elif code in PLACE_BY_CODE:
            other_places.setdefault(PLACE_BY_CODE[code].display, None)

    intents = {n for n, pattern in _INTENT_PATTERNS.items() if pattern.search(reading_text)}
    if len(mentioned) >= 2 and _BOTH_OR_BETWEEN.search(reading_text):
        intents.add("comparison")

    skip = [(m.start, m.end) for m in places] + act_spans
    reading = load_vocabulary().read(reading_text)
    return Query(
        text=text,
        length=length,
        references=tuple(references),
        jurisdictions=tuple(jurisdictions),
        other_places=tuple(other_places),
        intents=frozenset(intents),
        terms=_terms(text, references, skip),
        injection=_INJECTION.search(text) is not None,
        legal_terms=reading.legal_terms,
        rewrite=reading.rewrite,
        lay_terms=tuple(dict.fromkeys(lay.lower() for lay, _ in reading.matched)),
        asks_about=kinds_asked_for(reading_text),
        named_day=named_day,
    )


def is_vague(query: Query) -> bool:
    """Too vague to answer: no explicit reference and, besides generic words ("rules", "tell",
    "explain", "everything", ...), fewer than two content terms -- one content term is enough
    when the question also shows an intent or names a jurisdiction ("What is a promoter?")."""
    if query.firm_references:
        return False
    content = [t for t in query.terms if t not in GENERIC_TERMS]
    if len(content) >= 2:
        return False
    return not (content and (query.intents or query.jurisdictions))


@dataclass(frozen=True)
class Asked:
    """A question understood, with its filters: what the later stages read of it."""

    query: Query
    wanted: tuple[str, ...]  # the jurisdictions the caller asked for (empty: none)
    as_of: date | None  # the date asked for, else the day an expression URI in it names
    k: int
    vague: bool  # too vague to answer (:func:`is_vague`)
    hash: str  # for the log (:func:`question_hash`), never the text

    @property
    def only_unheld_places(self) -> bool:
        """It names only places the corpus holds nothing of, and no filter says where to look."""
        return bool(self.query.other_places and not self.query.jurisdictions and not self.wanted)


def understand_request(
    question: object,
    *,
    jurisdictions: Sequence[str] | str | None,
    as_of: str | date | None,
    top_k: int,
    known: Sequence[str],
) -> Asked:
    """The first stage of an answer: ``question`` understood (:func:`understand`) and the
    caller's filters parsed, each bad one a :class:`QuestionError`."""
    query = understand(question, known_jurisdictions=known)
    wanted = parse_jurisdictions(jurisdictions, known)
    day = parse_as_of(as_of) or query.named_day
    k = parse_top_k(top_k)
    return Asked(query, tuple(wanted), day, k, is_vague(query), question_hash(query.text))


def question_hash(question: str) -> str:
    """First 16 hex digits of the sha256 of the canonical question (for logs)."""
    canonical = canonicalize(question)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]
