"""The matters the Act leaves to rules and regulations, read from the Act's own text.

Pure domain code (no Dagster, no database). An Indian Act that delegates says so twice: in the
section that needs the detail ("... at such rate as may be prescribed") and in its rule-making
and regulation-making sections, which list every such matter as a lettered clause naming its
section ("In particular ... such rules may provide for all or any of the following matters,
namely: (g) the rate of interest payable under section 12; ..."). Those lists are the Act's own
index of what the states fill in: :func:`prescribed_matters` reads them from the parsed Act, and
:class:`MatterIndex` finds the matter a state rule's printed title restates, which is the section
the rule implements when its words name none.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

from civicsetu_pipelines.graph.references import extract_references, title_words

# "such rules may provide for all or any of the following matters" (the drafting formula of a
# rule- or regulation-making power), with the instrument it delegates to.
_POWER = re.compile(
    r"such\s+(?P<instrument>rules|regulations)\s+may\s+provide\s+for\s+all\s+or\s+any\s+of\s+"
    r"the\s+following\s+matters",
    re.IGNORECASE,
)
# A numbered sub-section at the start of a line (or of the section): "(2) In particular".
_SUB_SECTION = re.compile(r"(?:^|\n|\.\s)\((\d+)\)\s")
# A lettered clause at the start of a line: "(g) ", "(za) ".
_CLAUSE = re.compile(r"^\(([a-z]{1,2})\)\s+", re.MULTILINE)
# The clause's closing reference, cut off to name the matter: "... under sub-section (1) of
# section 24;" -> "the salaries and allowances payable to ..."
_TRAILING_REFERENCE = re.compile(
    r"\s*(?:as\s+)?(?:under|referred\s+to\s+in|for\s+display\s+under)\s+"
    r"(?:(?:clause|sub-section)\s*\([^)]*\)\s*(?:and\s+under\s+clause\s*\([^)]*\)\s*)?of\s+)*"
    r"(?:sub-section\s*\([^)]*\)\s*of\s+)?section\s+\d+[A-Z]?\s*[;.:]?\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Matter:
    """One matter the Act leaves to rules or regulations: a clause of its rule- or
    regulation-making section, with the sections it names."""

    key: str  # the clause's place in the Act: "84(2)(g)"
    instrument: str  # "rules" | "regulations"
    text: str  # the clause as printed, one line: "the rate of interest payable under section 12"
    name: str  # the clause without its closing reference: "the rate of interest payable"
    sections: tuple[str, ...]  # the Act units the clause names: ("Section 12",)
    chunk_id: str  # the Act chunk that prints it (evidence)
    page: int


def prescribed_matters(act_chunks: Iterable[Mapping[str, object]]) -> list[Matter]:
    """Every lettered clause of the Act's rule- and regulation-making sections that names the
    section it serves ("any other matter ..." names none and is left out), in the Act's order.

    ``act_chunks`` are the Act's chunks (``section_label``, ``legal_path``, ``text``,
    ``chunk_id``, ``page_start``, ``ordinal``); a power's clauses may run over several chunks.
    """
    ordered = sorted(act_chunks, key=lambda c: int(str(c["ordinal"])))
    matters: list[Matter] = []
    power: tuple[str, str, str] | None = None  # (section label, power's path, instrument)
    for chunk in ordered:
        text = str(chunk["text"])
        section = str(chunk["section_label"])
        found = _POWER.search(text)
        if found:
            path = str(chunk["legal_path"]).split("(")[0]
            subs = _SUB_SECTION.findall(text[: found.start()])
            power = (section, f"{path}({subs[-1]})" if subs else path,
                     found.group("instrument").lower())  # fmt: skip
            text = text[found.end() :]
        elif power is None or section != power[0]:
            power = None
            continue
        _, prefix, instrument = power
        starts = list(_CLAUSE.finditer(text))
        for i, clause in enumerate(starts):
            end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
            body = " ".join(text[clause.end() : end].split())
            sections = tuple(
                dict.fromkeys(str(r.label) for r in extract_references(body) if r.kind == "section")
            )
            if not sections:
                continue  # "(zf) any other matter which is to be ... prescribed"
            name = _TRAILING_REFERENCE.sub("", body).rstrip(" ;.:,") or body
            matters.append(
                Matter(
                    key=f"{prefix}({clause.group(1)})",
                    instrument=instrument,
                    text=body.rstrip(" ;"),
                    name=name,
                    sections=sections,
                    chunk_id=str(chunk["chunk_id"]),
                    page=int(str(chunk["page_start"])),
                )
            )
    return matters


# A rule's title restates a matter when the matter's words (its clause's, and at half weight the
# printed titles of the sections it names) cover MATTER_MIN_SCORE of the title's weighted words
# (each weighted by how rare it is among the matters) and no matter naming other sections comes
# within MATTER_MARGIN of it; matters of one wording ("the rate of interest payable" under
# sections 12, 18(1)(b), 19(4) and 19(7)) match together. Chosen on Gujarat's rules (dev) against
# the derivations their own words and the curated table give, then held to the other states'
# (test); BENCHMARKS.md, "Derivations from the Act's rule-making heads".
MATTER_MIN_SCORE = 0.5
MATTER_MARGIN = 0.05
MATTER_TITLE_WEIGHT = 0.5
MATTER_CONFIDENCE = 0.7
FUZZY_MIN_LENGTH = 6
KNOWN_ZIPF = 2.5  # a title word at least this common in English (wordfreq) is no OCR debris


def _words(text: str | None) -> frozenset[str]:
    """Content words, plurals folded further than titles fold them ("fees" is "fee"); "other",
    "additional" and "further" are one word, "other" (a head's "any other powers of the
    Tribunal" is a rule's "Additional powers of the Appellate Tribunal")."""
    words = {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in title_words(text)}
    if _OTHER.search(text or ""):
        words = (words - {"additional", "further"}) | {"other"}
    return frozenset(words)


_OTHER = re.compile(r"\b(?:other|additional|further)\b", re.IGNORECASE)


@dataclass(frozen=True)
class MatterIndex:
    """The Act's matters by their words, for :meth:`match`."""

    matters: tuple[Matter, ...]
    words: tuple[frozenset[str], ...]
    titles: tuple[frozenset[str], ...]  # words of the titles of the sections a matter names
    frequency: Mapping[str, int]

    @classmethod
    def build(cls, matters: Sequence[Matter], section_titles: Mapping[str, str]) -> MatterIndex:
        """``section_titles``: the Act's section titles by top-level label ("Section 9")."""
        words = tuple(_words(m.name) for m in matters)
        titles = tuple(
            frozenset().union(*(_words(section_titles.get(top_section(s))) for s in m.sections)) - w
            for m, w in zip(matters, words, strict=True)
        )
        frequency: dict[str, int] = {}
        for ws, ts in zip(words, titles, strict=True):
            for w in ws | ts:
                frequency[w] = frequency.get(w, 0) + 1
        return cls(tuple(matters), words, titles, frequency)

    def _weight(self, word: str) -> float:
        return math.log((len(self.matters) + 1) / (self.frequency.get(word, 0) + 1)) + 0.1

    def _readable(self, word: str) -> bool:
        """A word of the title worth scoring: a word the matters use (or one edit from one), or
        an English word; OCR's debris ("eoees", "tzmner") would only dilute the score."""
        if word in self.frequency or _said(frozenset([word]), frozenset(self.frequency)):
            return True
        from wordfreq import zipf_frequency  # a large import, on first use

        return zipf_frequency(word, "en") >= KNOWN_ZIPF

    def match(self, title: str | None) -> tuple[list[Matter], float] | None:
        """The matters a rule's printed ``title`` restates (several when the Act words them
        alike), with the score; None when none clearly does."""
        rule = frozenset(w for w in _words(title) if self._readable(w))
        if not rule or not self.matters:
            return None
        total = sum(self._weight(w) for w in rule)
        scored: list[tuple[float, Matter]] = []
        for matter, words, titles in zip(self.matters, self.words, self.titles, strict=True):
            gained = sum(self._weight(w) for w in _said(rule, words))
            gained += MATTER_TITLE_WEIGHT * sum(self._weight(w) for w in _said(rule, titles))
            if not gained:
                continue
            size = sum(self._weight(w) for w in words)
            size += MATTER_TITLE_WEIGHT * sum(self._weight(w) for w in titles)
            covered, said = gained / total, gained / size
            scored.append((round(2 * covered * said / (covered + said), 4), matter))
        scored.sort(key=lambda s: -s[0])
        if not scored or scored[0][0] < MATTER_MIN_SCORE:
            return None
        best_score, best = scored[0]
        alike = [m for _, m in scored if m.name == best.name]
        rivals = [m for score, m in scored[1:] if best_score - score < MATTER_MARGIN]
        if any(m.name != best.name for m in rivals):
            return None
        return alike, best_score


def _said(rule: frozenset[str], words: frozenset[str]) -> list[str]:
    """The matter's ``words`` the rule's title says: the same word, or one edit away when both
    are long enough for that to be an OCR slip ("idministrative") or a misprint ("filling")."""
    return [
        w for w in words
        if w in rule or (len(w) >= FUZZY_MIN_LENGTH and any(
            len(r) >= FUZZY_MIN_LENGTH and Levenshtein.distance(w, r) <= 1 for r in rule))
    ]  # fmt: skip


def top_section(label: str) -> str:
    """The top-level section of a label: "Section 9(2)" is "Section 9"."""
    return label.split("(")[0].strip()
