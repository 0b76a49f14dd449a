"""A buyer's words and the statute's: Snowball stems and the lay-to-legal vocabulary.

Pure domain code (no Dagster, no database), on the query hot path.

* :func:`stem` and :func:`stems` -- English Snowball stems (PyStemmer, the maintained C
  implementation of the Porter2 algorithm): "allottees" and "allottee", "delayed" and "delay",
  "penalties" and "penalty" meet. Every comparison of a question's words with a unit's text
  goes through these.
* :class:`Vocabulary` -- ``data/vocabulary.yaml``: lay words and phrases ("builder", "money
  back", "sale deed") with the Act's own words for them ("promoter", "return the amount",
  "conveyance deed") and where each equivalence comes from (a definition of section 2, a
  section's words). :meth:`Vocabulary.read` finds the lay terms of a question on stems, as whole
  phrases, longest first, and gives the legal terms to search for and a reformulation of the
  question in the statute's words (:class:`Reading`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Generic, TypeVar

import Stemmer
from pydantic import BaseModel, ConfigDict, Field

from civicsetu_pipelines.base import DATA_DIR, read_data_entries

VOCABULARY_YAML = DATA_DIR / "vocabulary.yaml"
T = TypeVar("T")
_WORD = re.compile(r"[a-z0-9]+")
_STEMMER = Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball (Porter2) stem of one lower-case word."""
    return str(_STEMMER.stemWord(word))


@lru_cache(maxsize=8192)
def stems(text: str) -> frozenset[str]:
    """The stemmed words of a text (memoized: unit texts are scored for many questions)."""
    return frozenset(stem_words(text))


def stem_words(text: str) -> list[str]:
    """The stems of a text's words, in order."""
    return [str(s) for s in _STEMMER.stemWords(_WORD.findall(text.lower()))]


_GLUE = frozenset(["a", "an", "and", "by", "for", "in", "is", "of", "on", "or", "the", "to"])


@lru_cache(maxsize=4096)
def content_stems(phrase: str) -> tuple[str, ...]:
    """The stems of a phrase's words less its glue words ("return the amount": return,
    amount), what must all be present for the phrase to count as present in a text."""
    words = [w for w in _WORD.findall(phrase.lower()) if w not in _GLUE]
    return tuple(str(s) for s in _STEMMER.stemWords(words))


class Entry(BaseModel):
    """One equivalence: lay terms, the Act's terms for them, and its source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lay: tuple[str, ...] = Field(min_length=1)
    legal: tuple[str, ...] = Field(min_length=1)
    anchor: bool = False  # a party or the property, not a matter the statute regulates
    source: str = Field(min_length=10)


@dataclass(frozen=True)
class Reading:
    """What the vocabulary reads in a question."""

    matched: tuple[tuple[str, str], ...]  # (lay words as written, the first legal term)
    legal_terms: tuple[str, ...]  # every legal term of every match, in order, once each
    rewrite: str | None  # the question in the statute's words; None when nothing matched


class PhraseIndex(Generic[T]):
    """Words and phrases indexed by their stems, each with a value (the first of a phrase
    wins); :meth:`scan` finds them in a text's stems, longest phrase first, without overlaps."""

    def __init__(self, pairs: Iterable[tuple[str, T]]) -> None:
        self._by_stems: dict[tuple[str, ...], T] = {}
        for phrase, value in pairs:
            key = tuple(stem_words(phrase))
            if key:
                self._by_stems.setdefault(key, value)
        self._longest = max((len(k) for k in self._by_stems), default=0)

    def get(self, phrase: str) -> T | None:
        """The value of one word or phrase (by its stems), or None."""
        return self._by_stems.get(tuple(stem_words(phrase)))

    def scan(self, keys: Sequence[str]) -> list[tuple[int, int, T]]:
        """(first word, last word + 1, value) of each phrase found in the stems ``keys``."""
        found: list[tuple[int, int, T]] = []
        i = 0
        while i < len(keys):
            for size in range(min(self._longest, len(keys) - i), 0, -1):
                value = self._by_stems.get(tuple(keys[i : i + size]))
                if value is not None:
                    found.append((i, i + size, value))
                    i += size
                    break
            else:
                i += 1
        return found


class Vocabulary:
    """The lay-to-legal vocabulary, indexed by the stems of its lay terms."""

    def __init__(self, entries: Iterable[Entry]) -> None:
        self.entries = tuple(entries)
        self._index = PhraseIndex((lay, e) for e in self.entries for lay in e.lay)

    def legal_for(self, term: str) -> tuple[str, ...]:
        """The legal terms for one lay word or phrase (by its stems), or ()."""
        entry = self._index.get(term)
        return entry.legal if entry else ()

    def names_a_matter(self, term: str) -> bool:
        """Whether a lay term names a matter the statute regulates (delay, refund, cracks), not
        only a party or the property (builder, flat: entries marked ``anchor``)."""
        entry = self._index.get(term)
        return entry is not None and not entry.anchor

    def read(self, text: str) -> Reading:
        """The lay terms of ``text`` (longest phrase first, no overlaps), their legal terms and
        the question rewritten with each lay term replaced by its first legal term."""
        words = list(_WORD.finditer(text.lower()))
        matched = self._index.scan([stem(m.group()) for m in words])
        if not matched:
            return Reading((), (), None)
        legal: dict[str, None] = {}
        parts: list[str] = []
        cursor = 0
        pairs = []
        for first, last, entry in matched:
            start, end = words[first].start(), words[last - 1].end()
            parts += [text[cursor:start], entry.legal[0]]
            cursor = end
            pairs.append((text[start:end], entry.legal[0]))
            legal.update(dict.fromkeys(entry.legal))
        parts.append(text[cursor:])
        rest = [t for t in legal if t not in {p[1] for p in pairs}]
        rewrite = "".join(parts) + (f" ({', '.join(rest)})" if rest else "")
        return Reading(tuple(pairs), tuple(legal), rewrite)


@cache
def load_vocabulary(path: Path = VOCABULARY_YAML) -> Vocabulary:
    """The vocabulary of ``data/vocabulary.yaml``, validated (cached); an error names the file
    and the entry."""
    return Vocabulary(read_data_entries(path, "terms", Entry, "term"))
