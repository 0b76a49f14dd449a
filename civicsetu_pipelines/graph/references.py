"""Cross-references in Indian statutes and rules: extraction and resolution.

Pure domain code (no Dagster). :func:`extract_references` finds the reference forms used in the
RERA Act and the state rules, with character offsets and the quoted phrase as evidence:

* ``section 18``, ``section 18(2)``, ``s. 18``, ``section 4A``, ``sections 12, 14 and 18``,
  ``sections 12 to 14``;
* chains: ``sub-section (2) of section 4``, ``clause (b) of sub-section (1) of section 9``,
  ``sub-clause (i) of clause (zk) of section 2``, ``the proviso to section 18``;
* ``rule 3``, ``sub-rule (2) of rule 5``, ``rules 3 and 4``;
* ``Form A`` / ``Form 'A'``;
* ``this Act`` / ``the Act`` and ``these rules``;
* other enactments (``section 300 of the Code of Criminal Procedure, 1973``, ``the Companies
  Act, 2013``, ``the Indian Penal Code``): recorded as external, never as a RERA section.

:func:`resolve` maps a reference to the finest unit that exists (sub-section if the document
has it, else the section) through a :class:`UnitIndex` built from the chunks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from civicsetu_pipelines.graph.statutes import load_statutes

_NUM = r"\d{1,3}[A-Z]{0,2}(?!,\d)"  # not the "10" of an amount "10,000"
_SUB = r"\(\s*\d{1,3}[A-Z]?\s*\)"
_CLAUSE = r"\(\s*[a-z]{1,2}\s*\)"
_SUBCLAUSE = r"\(\s*[ivxl]{1,6}\s*\)"
_AND = r"\s*(?:,|and|or|,\s*and|,\s*or)\s*"

# "clause (b) of sub-section (1) of section 9", "sub-rule (2) of rule 5", "section 18(2)(a)"
_CHAIN = re.compile(
    rf"""
    (?P<proviso>(?i:(?:the\s+)?(?:first\s+|second\s+|third\s+)?proviso\s+to\s+))?
    (?:
      (?i:sub-clause|sub\s*clause)s?\s+(?P<subclause>{_SUBCLAUSE}(?:{_AND}{_SUBCLAUSE})*)\s+of\s+
    )?
    (?:
      (?i:clauses?)\s+(?P<clause>{_CLAUSE}(?:{_AND}{_CLAUSE})*)\s+of\s+
    )?
    (?:
      (?P<subkind>(?i:sub-sections?|sub\s*sections?|sub-rules?|sub\s*rules?))
      \s+(?P<sub>{_SUB}(?:{_AND}{_SUB})*)\s+of\s+
    )?
    (?P<kind>(?i:sections?|(?<![A-Za-z.])s\.|rules?)|regulations?)\s*  # "Regulation": a name
    # ("Rs. 600" is rupees, not "s. 600")
    (?P<numbers>{_NUM}(?:\s*{_SUB})?(?:\s*{_CLAUSE})?(?:\s*{_SUBCLAUSE})?
       (?:(?:{_AND}|\s+to\s+){_NUM}(?:\s*{_SUB})?(?:\s*{_CLAUSE})?)*)
    """,
    re.VERBOSE,
)
_FORM = re.compile(r"\bForm\s*[-–]?\s*['‘’\"]?(?P<form>[A-Z]{1,2}|\d{1,2})['‘’\"]?(?![a-z])")
_SELF_ACT = re.compile(r"\b(?:this|the\s+said|the)\s+Act\b(?!\s*,\s*\d{4})", re.IGNORECASE)
_SELF_RULES = re.compile(r"\b(?:these|the\s+said)\s+rules\b", re.IGNORECASE)
# "of the Code of Criminal Procedure, 1973", "of the Companies Act, 2013", "Indian Penal Code"
# "of the Code of Criminal Procedure, 1973", "of the Indian Penal Code" (not "of the Act")
_EXTERNAL_AFTER = re.compile(
    r"^\s*of\s+the\s+(?!Act\b|said\s+Act\b|Real\s+Estate\b)"
    r"(?P<name>[A-Z][A-Za-z.()&'\s-]{2,80}?(?:Act|Code|Procedure|Ordinance))"
    r"(?:,?\s*(?P<year>1[89]\d{2}|20\d{2}))?"
)
# Words that may stand between a reference and the enactment it belongs to.
_BRIDGE = re.compile(
    r"^\s*(?:for\s+the\s+purposes?\s+of\s+section\s+\d{1,3}[A-Z]?|and\s+Chapter\s+[IVXLC]+[A-Z]?)(?=\s)"
)
_OF_THIS_ACT = re.compile(r"^\s*of\s+(?:this|the)\s+(?:Act|said\s+Act)\b", re.IGNORECASE)
_OF_RERA = re.compile(
    r"^\s*of\s+the\s+Real\s+Estate\s*\(Regulation\s+and\s+Development\)\s+Act", re.IGNORECASE
)


@dataclass(frozen=True)
class Reference:
    """One reference as written: what it points to and the evidence for it."""

    kind: str  # section | rule | regulation | form | this_act | these_rules | external
    number: str | None  # "18", "4A", "A" (form); None for this_act / these_rules / external
    path: tuple[str, ...] = ()  # ("(2)", "(a)") below the number
    proviso: bool = False
    external: str | None = None  # what is cited of another enactment, for kind "external"
    enactment: str | None = None  # that enactment's name (data/statutes.yaml's when known)
    start: int = 0
    end: int = 0
    phrase: str = ""

    @property
    def label(self) -> str | None:
        """The label of the unit referred to, e.g. ``Section 18(2)``."""
        if self.number is None:
            return None
        word = {"section": "Section", "rule": "Rule", "regulation": "Regulation",
                "form": "Form"}[self.kind]  # fmt: skip
        return f"{word} {self.number}{''.join(self.path)}"


def _tokens(text: str | None, pattern: str) -> list[str]:
    return [re.sub(r"\s+", "", t) for t in re.findall(pattern, text or "")]


def _expand(numbers: str) -> list[tuple[str, tuple[str, ...]]]:
    """``12, 14 and 18`` / ``12 to 14`` / ``18(2)(a)`` into (number, path) items."""
    items: list[tuple[str, tuple[str, ...]]] = []
    parts = re.split(r"(\s+to\s+|" + _AND + r")", numbers)
    pending_range = False
    for part in parts:
        if not part or not part.strip():
            continue
        if re.fullmatch(r"\s+to\s+", part):
            pending_range = True
            continue
        if re.fullmatch(_AND, part):
            continue
        match = re.match(rf"\s*({_NUM})\s*(.*)$", part)
        if not match:
            continue
        number, rest = match.group(1), match.group(2)
        path = tuple(re.sub(r"\s+", "", p) for p in re.findall(r"\([^)]*\)", rest))
        if pending_range and items and items[-1][0].isdigit() and number.isdigit():
            low, high = int(items[-1][0]), int(number)
            if 0 < high - low <= 50:
                items.extend((str(n), ()) for n in range(low + 1, high + 1))
            pending_range = False
            continue
        pending_range = False
        items.append((number, path))
    return items


def extract_references(text: str) -> list[Reference]:
    """Every reference in ``text``, in order of appearance. Other enactments are named as
    ``data/statutes.yaml`` names them when it knows them (aliases and abbreviations too)."""
    statutes = load_statutes()
    refs: list[Reference] = []
    taken: list[tuple[int, int]] = []
    for match in _CHAIN.finditer(text):
        kind_word = match.group("kind").lower()
        kind = (
            "section" if kind_word.startswith("s") and not kind_word.startswith("sub")
            else "rule" if kind_word.startswith("rule") else "regulation"
        )  # fmt: skip
        after = text[match.end() : match.end() + 120]
        external = None
        bridge = _BRIDGE.match(after)  # "... 228 for the purposes of section 196 of the IPC"
        beyond = after[bridge.end() :] if bridge else after
        span_end = match.end()
        # A statute of data/statutes.yaml ("of the EPF Act", "of the Cr.P.C."), else any
        # "of the <Name> Act|Code, <year>" but this Act's own names.
        known = statutes.named_at(beyond)
        ext = None if known else _EXTERNAL_AFTER.match(beyond)
        if ext and bridge and _OF_THIS_ACT.match(beyond):
            ext = None
        if known and not _OF_RERA.match(after):
            external = known[0]
            span_end = match.end() + known[1] + (bridge.end() if bridge else 0)
        elif ext and not _OF_RERA.match(after) and not _OF_THIS_ACT.match(after):
            name = re.sub(r"\s+", " ", ext.group("name")).strip()
            written = f"{name}, {ext.group('year')}" if ext.group("year") else name
            external = statutes.canonical(written)
            span_end = match.end() + ext.end() + (bridge.end() if bridge else 0)
        subs = _tokens(match.group("sub"), _SUB)
        clauses = _tokens(match.group("clause"), _CLAUSE)
        subclauses = _tokens(match.group("subclause"), _SUBCLAUSE)
        phrase = text[match.start() : match.end()].strip()
        for number, inline in _expand(match.group("numbers")):
            paths = _combine(inline, subs, clauses, subclauses)
            for path in paths:
                refs.append(
                    Reference(
                        kind="external" if external else kind,
                        number=None if external else number,
                        path=() if external else path,
                        proviso=bool(match.group("proviso")),
                        external=f"{kind} {number} of {external}" if external else None,
                        enactment=external,
                        start=match.start(),
                        end=match.end(),
                        phrase=phrase,
                    )
                )
        taken.append((match.start(), span_end))
    for match in _FORM.finditer(text):
        refs.append(
            Reference(
                "form",
                match.group("form"),
                start=match.start(),
                end=match.end(),
                phrase=match.group(0),
            )  # fmt: skip
        )
    for named in statutes.find(text):
        if any(s <= named.start < e for s, e in taken):
            continue
        phrase = re.sub(r"\s+", " ", text[named.start : named.end])
        refs.append(
            Reference(
                "external",
                None,
                external=named.statute,
                enactment=named.statute,
                start=named.start,
                end=named.end,
                phrase=phrase,
            )  # fmt: skip
        )
    for pattern, kind in ((_SELF_ACT, "this_act"), (_SELF_RULES, "these_rules")):
        for match in pattern.finditer(text):
            if any(s <= match.start() < e for s, e in taken):
                continue
            refs.append(Reference(kind, None, start=match.start(), end=match.end(),
                                  phrase=match.group(0)))  # fmt: skip
    refs.sort(key=lambda r: (r.start, r.kind))
    return refs


def _combine(
    inline: tuple[str, ...], subs: list[str], clauses: list[str], subclauses: list[str]
) -> list[tuple[str, ...]]:
    """Paths below the number: inline ``18(2)(a)`` or the chain's sub-sections and clauses."""
    if inline:
        return [inline]
    paths: list[tuple[str, ...]] = [()]
    for level in (subs, clauses, subclauses):
        if level:
            paths = [(*p, item) for p in paths for item in level]
    return paths


# ---------------------------------------------------------------------------------------------
# Resolution


@dataclass
class UnitIndex:
    """Which labelled units exist in a document, and the chunk ids that hold them."""

    by_label: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_chunks(cls, chunks: Iterable[tuple[str, str]]) -> UnitIndex:
        """From (label, chunk id) pairs; a range label ``Section 2(b)-(d)`` covers b, c, d."""
        index = cls()
        for label, chunk_id in chunks:
            for covered in _covered_labels(label):
                index.by_label.setdefault(covered, chunk_id)
        return index

    def finest(self, label: str) -> tuple[str, str] | None:
        """The most specific existing label at or above ``label``, with its chunk id."""
        current = label
        while True:
            if current in self.by_label:
                return current, self.by_label[current]
            shorter = re.sub(r"\([^()]*\)$", "", current)
            if shorter == current:
                return None
            current = shorter


def _covered_labels(label: str) -> list[str]:
    match = re.fullmatch(r"(?P<base>.*?)\((?P<first>[^()]+)\)-\((?P<last>[^()]+)\)", label)
    if not match:
        return [label]
    base, first, last = match.group("base"), match.group("first"), match.group("last")
    sequence = _sequence(first, last)
    return [f"{base}({item})" for item in sequence] if sequence else [label]


def _sequence(first: str, last: str) -> list[str]:
    if first.isdigit() and last.isdigit():
        return [str(n) for n in range(int(first), int(last) + 1)]
    letters = "abcdefghijklmnopqrstuvwxyz"
    order = [*letters, *("z" + ch for ch in letters)]
    if first in order and last in order and order.index(first) <= order.index(last):
        return order[order.index(first) : order.index(last) + 1]
    return []


@dataclass(frozen=True)
class Resolution:
    reference: Reference
    target_document: str | None
    target_label: str | None
    target_chunk: str | None

    @property
    def resolved(self) -> bool:
        return self.target_chunk is not None


def resolve(
    reference: Reference,
    *,
    document_key: str,
    doc_type: str,
    act_key: str,
    indexes: Mapping[str, UnitIndex],
) -> Resolution | None:
    """Resolve an internal reference; None for kinds that name no unit (external, this Act)."""
    if reference.kind in {"external", "this_act", "these_rules"} or reference.label is None:
        return None
    # In rules, "section N" is the RERA Act's section N (another Act would have been named).
    target = act_key if reference.kind == "section" and doc_type != "act" else document_key
    index = indexes.get(target)
    found = index.finest(reference.label) if index else None
    return Resolution(
        reference,
        target,
        found[0] if found else reference.label,
        found[1] if found else None,
    )


# Words that introduce the Act provision a rule implements: "For the purpose of sub-section (2)
# of section 13", "under section 44", "as per section 7", "In addition to the powers specified in
# clause (iv) of sub-section (2) of section 35", "Subject to the provisions of section 40" ...
_DERIVATION = re.compile(
    r"(?:for\s+the\s+purposes?\s+of|under|in\s+pursuance\s+of|as\s+required\s+(?:by|under)"
    r"|referred\s+to\s+in|specified\s+(?:in|under)|in\s+accordance\s+with|as\s+per"
    r"|mentioned\s+in|provided\s+(?:in|under)|set\s+out\s+in|subject\s+to\s+the\s+provisions"
    r"\s+of|commencement\s+of|in\s+terms\s+of)\s*$",
    re.IGNORECASE,
)
# Rules that frame the document rather than implement a provision.
_FRAMING_TITLE = re.compile(r"^\s*(?:definitions?|short\s+title)\b", re.IGNORECASE)

PHRASE_CONFIDENCE = 1.0  # the Act section is introduced by a derivation phrase
MENTION_CONFIDENCE = 0.8  # the first Act section the rule's opening names, without such a phrase


# The drafting formulas that open a short-title or definitions rule, for a rule whose printed
# title was lost (a margin note OCR did not read).
_FRAMING_TEXT = re.compile(
    r"\b(?:these|the)\s+(?:rules|regulations)\s+may\s+be\s+called\b"
    r"|\bin\s+these\s+(?:rules|regulations)\s*,?\s+unless\s+the\s+context",
    re.IGNORECASE,
)


def is_framing_rule(title: str | None, text: str | None = None) -> bool:
    """A rule that frames the document (definitions, short title) and implements no section:
    by its title, or, when it has none, by its opening words (``text``)."""
    if title and title.strip():
        return bool(_FRAMING_TITLE.match(title))
    return bool(text and _FRAMING_TEXT.search(text[:400]))


@dataclass(frozen=True)
class Derivation:
    """The Act section(s) a rule implements, read from the rule's opening words."""

    references: tuple[Reference, ...]  # one phrase may name several ("sections 12, 18 and 19")
    confidence: float
    basis: str  # "phrase" | "mention"


def derivation(text: str, title: str | None = None) -> Derivation | None:
    """The Act section a rule implements, from its own words (pass the rule's opening part).

    The first reference to an Act section introduced by "For the purpose of", "under", "as per",
    "specified in" and the like (confidence 1.0); else the first Act section the text names
    (0.8). Every section of a list ("sections 12, 18 and 19") is returned. Definitions and
    short-title rules derive from nothing.
    """
    if is_framing_rule(title):
        return None
    sections = [ref for ref in extract_references(text) if ref.kind == "section"]
    if not sections:
        return None
    chosen, confidence, basis = sections[0], MENTION_CONFIDENCE, "mention"
    for ref in sections:
        if _DERIVATION.search(text[max(0, ref.start - 60) : ref.start]):
            chosen, confidence, basis = ref, PHRASE_CONFIDENCE, "phrase"
            break
    same = tuple(ref for ref in sections if ref.start == chosen.start)
    return Derivation(same, confidence, basis)


def internal_references(refs: Sequence[Reference]) -> list[Reference]:
    return [r for r in refs if r.kind in {"section", "rule", "regulation", "form"}]


# A rule whose words name no Act section but whose printed title is an Act section's title in
# its own words ("Budget, accounts and audit" is section 77's): derived from that section when
# the titles share a word few of the Act's titles use (in at most TITLE_RARE_WORD of them) and
# their overlap, each word weighted by how rare it is among the Act's titles (the rule's words
# found in the section's chapter heading count half: "... of Authority" in Chapter V), reaches
# TITLE_MIN_SCORE and beats every other section. Chosen on the curated table's Gujarat entries
# (dev: 6 of 16 derived, none wrong), then held to the others (test: 12 of 24, none wrong);
# BENCHMARKS.md, "Derivations from rule titles".
TITLE_MIN_SCORE = 0.35
TITLE_RARE_WORD = 4
TITLE_CHAPTER_WEIGHT = 0.5
TITLE_CONFIDENCE = 0.6
_TITLE_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "and",
        "or",
        "to",
        "in",
        "for",
        "by",
        "on",
        "with",
        "under",
        "as",
        "any",
        "such",
        "its",
        "their",
        "be",
        "shall",
        "may",
        "other",
        "which",
        "from",
        "at",
        "this",
        "that",
        "these",
        "those",
    ]
)


def title_words(text: str | None) -> frozenset[str]:
    """Content words of a heading, plurals folded ("Members" is "member")."""
    return frozenset(
        w[:-1] if w.endswith("s") and len(w) > 4 else w
        for w in re.findall(r"[a-z]+", (text or "").lower())
        if w not in _TITLE_STOP and len(w) > 2
    )


@dataclass(frozen=True)
class ActTitles:
    """The Act's sections by their titles (and chapter headings), for :meth:`derive`."""

    sections: dict[str, tuple[frozenset[str], frozenset[str]]]  # label -> (title, chapter)
    frequency: dict[str, int]  # how many section titles use each word

    @classmethod
    def from_units(cls, units: Iterable[tuple[str, str | None, str | None]]) -> ActTitles:
        """From (section label, title, chapter) of the Act's sections (repeats ignored)."""
        sections: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        for label, title, chapter in units:
            if title and label not in sections:
                sections[label] = (title_words(title), title_words(chapter))
        frequency: dict[str, int] = {}
        for words, _ in sections.values():
            for word in words:
                frequency[word] = frequency.get(word, 0) + 1
        return cls(sections, frequency)

    def _weight(self, word: str) -> float:
        return math.log((len(self.sections) + 1) / (self.frequency.get(word, 0) + 1))

    def derive(self, title: str | None) -> tuple[str, float] | None:
        """The section whose title ``title`` restates, with the score; None when no section
        clearly does (see TITLE_MIN_SCORE)."""
        rule = title_words(title)
        if not rule:
            return None
        scored = []
        for label, (words, chapter) in self.sections.items():
            shared = rule & words
            if not any(self.frequency.get(w, 0) <= TITLE_RARE_WORD for w in shared):
                continue
            union = sum(self._weight(w) for w in rule | words)
            gained = sum(self._weight(w) for w in shared)
            gained += TITLE_CHAPTER_WEIGHT * sum(self._weight(w) for w in (rule - words) & chapter)
            scored.append((gained / union if union else 0.0, label))
        scored.sort(reverse=True)
        if not scored or scored[0][0] < TITLE_MIN_SCORE:
            return None
        if len(scored) > 1 and scored[1][0] == scored[0][0]:
            return None
        return scored[0][1], round(scored[0][0], 3)
