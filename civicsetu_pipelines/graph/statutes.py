"""Other enactments the documents cite, as data: ``data/statutes.yaml``.

Pure domain code. :func:`load_statutes` reads and validates the file; :class:`Statutes` finds
where a text names one of them (:meth:`Statutes.find`) and whether a text right after a
reference ("... of the EPF Act") names one (:meth:`Statutes.named_at`), each with the enactment
as the file names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from civicsetu_pipelines.base import DATA_DIR, read_data_entries

STATUTES_YAML = DATA_DIR / "statutes.yaml"
_ABBREVIATION = re.compile(r"^[A-Z][A-Za-z.&\s]{1,9}$")  # "IPC", "Cr.P.C.", "EPF & MP Act"
_ENACTMENT_WORD = re.compile(r"\b(?:Act|Code|Sanhita)\b")


def _is_abbreviation(alias: str) -> bool:
    """ "IPC", "Cr.P.C.", "MOFA": short, and at least two capitals."""
    return bool(_ABBREVIATION.match(alias)) and sum(c.isupper() for c in alias) >= 2


class Statute(BaseModel):
    """One other enactment: the name edges give it, and how documents write it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=3)
    aliases: tuple[str, ...] = ()

    @field_validator("aliases")
    @classmethod
    def _specific(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for alias in value:
            if not (_ENACTMENT_WORD.search(alias) or _is_abbreviation(alias)):
                raise ValueError(f"alias {alias!r} names no Act, Code or Sanhita and is no "
                                 "abbreviation: it would match ordinary words")  # fmt: skip
        return value


@dataclass(frozen=True)
class Named:
    """A place where a text names a statute."""

    start: int
    end: int
    statute: str  # its name in the data file


def _alias_pattern(alias: str) -> str:
    """A whole-word, whitespace-tolerant pattern: case-sensitive for short abbreviations."""
    words = [re.escape(w) for w in alias.split()]
    body = r"\s+".join(words)
    if _is_abbreviation(alias):
        return rf"(?-i:{body})"
    return body


class Statutes:
    """Every statute's name and aliases in one alternation, longest first (so "Companies Act,
    2013" wins over "Companies Act")."""

    def __init__(self, entries: tuple[Statute, ...]) -> None:
        self.entries = entries
        forms: dict[str, str] = {}
        for entry in entries:
            for form in (entry.name, *entry.aliases):
                key = " ".join(form.split()).lower()
                if key in forms and forms[key] != entry.name:
                    raise ValueError(f"{STATUTES_YAML}: {form!r} names both {forms[key]!r} and "
                                     f"{entry.name!r}")  # fmt: skip
                forms[key] = entry.name
        self._by_form = forms
        ordered = sorted({" ".join(f.split()) for e in entries for f in (e.name, *e.aliases)},
                         key=len, reverse=True)  # fmt: skip
        alternation = "|".join(f"(?:{_alias_pattern(form)})" for form in ordered)
        self._any = re.compile(rf"(?i)(?<![\w.])(?:{alternation})(?![\w])")
        self._after = re.compile(rf"(?i)^\s*(?:of|under)\s+(?:the\s+)?({alternation})(?![\w])")

    def _name(self, written: str) -> str:
        return self._by_form[" ".join(written.split()).lower()]

    def find(self, text: str) -> list[Named]:
        """Every place ``text`` names a statute, in order."""
        return [Named(m.start(), m.end(), self._name(m.group(0))) for m in self._any.finditer(text)]

    def canonical(self, written: str) -> str:
        """The data file's name for an enactment written ``written`` ("Companies Act 2013" is
        "Companies Act, 2013"), or ``written`` itself when the file does not know it."""
        return self._by_form.get(" ".join(written.split()).lower(), written)

    def named_at(self, text: str) -> tuple[str, int] | None:
        """When ``text`` opens with "of (the) <statute>": the statute and where the match ends."""
        match = self._after.match(text)
        return (self._name(match.group(1)), match.end()) if match else None


@cache
def load_statutes(path: Path = STATUTES_YAML) -> Statutes:
    """The statutes of ``data/statutes.yaml``, validated (cached); an error names the file and
    the entry."""
    return Statutes(tuple(read_data_entries(path, "statutes", Statute, "statute")))
