"""Subjects other enactments govern: stamp duty, GST, income tax ... (``data/other_laws.yaml``).

Pure domain code (no Dagster, no database), on the query hot path. :func:`subject_of` finds the
first such subject a question names, matched on Snowball stems as a whole phrase (the same
stems as :mod:`~civicsetu_pipelines.answer.vocabulary`); :func:`speaks_of` tells whether a text
names it. The composer refuses a question about such a subject as out of scope, naming the
enactment that governs it, unless the best units retrieved speak of the subject themselves.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from civicsetu_pipelines.answer.vocabulary import PhraseIndex, stem_words
from civicsetu_pipelines.base import DATA_DIR, read_data_entries

OTHER_LAWS_YAML = DATA_DIR / "other_laws.yaml"


class OtherLaw(BaseModel):
    """A subject another enactment governs, the phrases that name it, and the source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str = Field(min_length=3)
    phrases: tuple[str, ...] = Field(min_length=1)
    governed_by: str = Field(min_length=5)
    source: str = Field(min_length=10)


class OtherLaws:
    """The subjects, indexed by the stems of their phrases."""

    def __init__(self, entries: Iterable[OtherLaw]) -> None:
        self.entries = tuple(entries)
        self._index = PhraseIndex((p, law) for law in self.entries for p in law.phrases)

    def subject_of(self, text: str) -> OtherLaw | None:
        """The first subject ``text`` names (the longest phrase at the earliest word)."""
        found = self._index.scan(stem_words(text))
        return found[0][2] if found else None

    def speaks_of(self, text: str, law: OtherLaw) -> bool:
        """Whether ``text`` names ``law``'s subject with any of its phrases."""
        return any(named is law for _, _, named in self._index.scan(stem_words(text)))


@cache
def load_other_laws(path: Path = OTHER_LAWS_YAML) -> OtherLaws:
    """The subjects of ``data/other_laws.yaml``, validated (cached); an error names the file and
    the entry."""
    return OtherLaws(read_data_entries(path, "subjects", OtherLaw, "subject"))
