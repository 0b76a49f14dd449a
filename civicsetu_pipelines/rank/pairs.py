"""Training pairs mined from the corpus itself: questions with the units that answer them.

Pure domain code over psycopg (no Dagster). The corpus is labelled data, and nothing here reads
the golden files:

* ``title``: every section's, rule's and regulation's printed title is a question its own text
  answers ("Return of amount and compensation" -> Section 18); a state's unit is asked with its
  state named ("Timelines for refund in Gujarat"), as a buyer would ask about a state;
* ``faq``: every FAQ question is a lay question whose answer cites the governing sections (its
  REFERENCES edges to the Act);
* ``judgment``: a judgment's sentence that cites an Act section, the citation taken out, is a
  question that section answers;
* ``derivation``: a state rule's title asked with no state named is answered first by the Act
  section the rule derives from (the law of every state);
* ``lay``: a title with the statute's words replaced by a buyer's (``data/vocabulary.yaml``).

Each pair keeps its provenance (the source, the chunk it came from). Mining is deterministic
(sorted rows, no randomness), and a slice of its own is held back (``held_back``: about one in
HOLD_BACK_EVERY queries, by the hash of its text) for choosing among training variants without
touching the golden files.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from civicsetu_pipelines.answer import load_vocabulary
from civicsetu_pipelines.base import load_jurisdictions
from civicsetu_pipelines.graph import top_section

ACT_JURISDICTION = "CENTRAL"
HOLD_BACK_EVERY = 10
MIN_WORDS = 2  # a title of one word ("Definitions") asks nothing
MAX_JUDGMENT_WORDS = 40


@dataclass(frozen=True)
class TrainingQuery:
    """A question mined from the corpus and the units that answer it."""

    query: str
    positives: tuple[tuple[str, str], ...]  # (jurisdiction, section label) of each answer
    source: str  # title | faq | judgment | derivation | lay
    origin: str  # the chunk the question was read from
    held_back: bool

    def as_row(self) -> dict[str, Any]:
        return {"query": self.query, "positives": [list(p) for p in self.positives],
                "source": self.source, "origin": self.origin,
                "held_back": self.held_back}  # fmt: skip

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TrainingQuery:
        """The query :meth:`as_row` wrote."""
        return cls(str(row["query"]), tuple((str(j), str(s)) for j, s in row["positives"]),
                   str(row["source"]), str(row["origin"]), bool(row["held_back"]))  # fmt: skip


def held_back(query: str) -> bool:
    """Whether ``query`` is in the held-back slice (fixed by its text)."""
    return int(hashlib.sha256(query.lower().encode()).hexdigest(), 16) % HOLD_BACK_EVERY == 0


_TITLE_END = re.compile(r"[\s.:;,\-—–]+$")
_FRAMING = re.compile(r"^(?:definitions?|short\s+title)", re.IGNORECASE)


def clean_title(title: str) -> str:
    """A printed title as a question: its trailing ".-" and OCR debris dropped."""
    return _TITLE_END.sub("", " ".join(title.split())).strip(" '\"|")


def _query(text: str, positives: Iterable[tuple[str, str]], source: str, origin: str) -> (
    TrainingQuery
):  # fmt: skip
    return TrainingQuery(text, tuple(sorted(set(positives))), source, origin, held_back(text))


_TITLES = (
    "SELECT DISTINCT ON (jurisdiction, document_key, section_label) jurisdiction, document_key, "
    "section_label, title, chunk_id::text FROM legal_chunks WHERE status = 'current' "
    "AND unit IN ('section', 'rule', 'regulation') AND coalesce(title, '') <> '' "
    "ORDER BY jurisdiction, document_key, section_label, ordinal"
)
_CITED = (
    "SELECT e.source_id, e.target_label, e.evidence_start, e.evidence_end, c.title, c.text, "
    "c.doc_type FROM graph_edges e JOIN legal_chunks c ON c.chunk_id::text = e.source_id "
    "AND c.status = 'current' WHERE e.edge_type = 'REFERENCES' AND e.target_document = %s "
    "AND c.doc_type IN ('faq', 'judgment') ORDER BY e.source_id, e.evidence_start"
)
_DERIVED = (
    "SELECT DISTINCT e.source_document, e.source_label, e.target_label FROM graph_edges e "
    "WHERE e.edge_type = 'DERIVED_FROM' AND e.target_document = %s "
    "ORDER BY 1, 2, 3"
)


def mine_training_queries(conn: psycopg.Connection[Any], act_key: str) -> list[TrainingQuery]:
    """Every training query the stored corpus teaches (see the module docstring), in a fixed
    order, duplicates (same text and source) merged."""
    names = {j.code: j.name for j in load_jurisdictions().items}
    titles = conn.execute(_TITLES).fetchall()
    out: list[TrainingQuery] = []
    rule_titles: dict[tuple[str, str], tuple[str, str]] = {}
    for jurisdiction, document, section, title, chunk in titles:
        text = clean_title(str(title))
        if len(text.split()) < MIN_WORDS or _FRAMING.match(text):
            continue
        if jurisdiction != ACT_JURISDICTION:
            rule_titles[(document, section)] = (text, chunk)
            text = f"{text} in {names.get(jurisdiction, jurisdiction.title())}"
        out.append(_query(text, [(jurisdiction, section)], "title", chunk))
    out += _lay_rewrites([q for q in out if q.source == "title"])
    by_question: dict[tuple[str, str], set[tuple[str, str]]] = {}
    judgment: list[TrainingQuery] = []
    for source_id, target, start, end, title, text, doc_type in conn.execute(_CITED, (act_key,)):
        section = (ACT_JURISDICTION, top_section(str(target)))
        if doc_type == "faq" and title:
            by_question.setdefault((str(title), str(source_id)), set()).add(section)
        elif doc_type == "judgment" and start is not None:
            sentence = _sentence_without(str(text), int(start), int(end))
            if sentence:
                judgment.append(_query(sentence, [section], "judgment", str(source_id)))
    out += [_query(q, positives, "faq", origin) for (q, origin), positives in
            sorted(by_question.items())]  # fmt: skip
    out += judgment
    derived: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for document, rule, target in conn.execute(_DERIVED, (act_key,)):
        if (str(document), str(rule)) in rule_titles:
            derived.setdefault((str(document), str(rule)), set()).add(
                (ACT_JURISDICTION, top_section(str(target)))
            )
    for key, positives in sorted(derived.items()):
        text, chunk = rule_titles[key]
        out.append(_query(text, positives, "derivation", chunk))
    return _merged(out)


def _merged(queries: Sequence[TrainingQuery]) -> list[TrainingQuery]:
    """One query per (text, source): the positives of its repeats joined."""
    seen: dict[tuple[str, str], TrainingQuery] = {}
    for q in queries:
        key = (q.query.lower(), q.source)
        if key in seen:
            old = seen[key]
            seen[key] = _query(old.query, [*old.positives, *q.positives], old.source, old.origin)
        else:
            seen[key] = q
    return list(seen.values())


_SENTENCE_END = re.compile(r"(?<=[.;])\s+(?=[A-Z(])")


def _sentence_without(text: str, start: int, end: int) -> str | None:
    """The sentence of ``text`` holding [start, end), with that citation taken out; None when
    what is left is too short or too long to be a question."""
    bounds = [0, *(m.end() for m in _SENTENCE_END.finditer(text)), len(text)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        if a <= start < b:
            sentence = text[a:start] + text[end:b]
            words = " ".join(sentence.split()).split()
            if MIN_WORDS * 3 <= len(words) <= MAX_JUDGMENT_WORDS:
                return " ".join(words)
            return None
    return None


def _lay_rewrites(titles: Sequence[TrainingQuery]) -> list[TrainingQuery]:
    """Titles with the statute's words replaced by a buyer's (the first lay word of each
    vocabulary entry whose legal word the title uses)."""
    vocabulary = load_vocabulary()
    swaps: list[tuple[re.Pattern[str], str]] = []
    for entry in vocabulary.entries:
        for legal in entry.legal:
            swaps.append((re.compile(rf"\b{re.escape(legal)}s?\b", re.IGNORECASE), entry.lay[0]))
    out = []
    for q in titles:
        text = q.query
        for pattern, lay in swaps:
            text = pattern.sub(lay, text)
        if text.lower() != q.query.lower():
            out.append(_query(text, q.positives, "lay", q.origin))
    return out


def counts(queries: Sequence[TrainingQuery]) -> Mapping[str, int]:
    """How many queries of each source, and held back."""
    out: dict[str, int] = {}
    for q in queries:
        out[q.source] = out.get(q.source, 0) + 1
    out["held_back"] = sum(q.held_back for q in queries)
    out["total"] = len(queries)
    return out
