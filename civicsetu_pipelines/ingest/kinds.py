"""Kinds of legal documents, as data: ``data/kinds.yaml``.

Pure domain code. A kind (``act``, ``rules``, ``judgment`` ...) says what its numbered units are
called, whether they are case law, whether its margin titles come first, and the signals that
name it in a document's first pages.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from civicsetu_pipelines.base import DATA_DIR, read_data_yaml

KINDS_YAML = DATA_DIR / "kinds.yaml"


class Kind(BaseModel):
    """One kind of document (immutable)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    unit: str = Field(pattern=r"^[a-z]+$")
    case_law: bool = False
    margin_first: bool = False
    signals: tuple[tuple[str, float], ...] = ()

    @field_validator("signals")
    @classmethod
    def _compiles(cls, value: tuple[tuple[str, float], ...]) -> tuple[tuple[str, float], ...]:
        for pattern, _weight in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"signal {pattern!r} is not a regex: {exc}") from None
        return value

    @property
    def unit_label(self) -> str:
        return self.unit.capitalize()


@cache
def load_kinds(path: Path = KINDS_YAML) -> dict[str, Kind]:
    """Kind name -> :class:`Kind`, validated (cached); errors name the file and the kind."""
    kinds = {}
    for name, entry in (read_data_yaml(path, "kinds") or {}).items():
        try:
            kinds[name] = Kind.model_validate({"name": name, **(entry or {})})
        except ValidationError as exc:
            raise ValueError(f"{path}: kind {name!r}: {exc}") from None
    return kinds


def kind_names() -> tuple[str, ...]:
    return tuple(load_kinds())


def is_case_law(kind: str) -> bool:
    """Whether documents of ``kind`` are case law (a judgment), not legislation."""
    found = load_kinds().get(kind)
    return found is not None and found.case_law


def unit_words() -> dict[str, tuple[str, str]]:
    """Kind -> (unit, Unit label): ``{"rules": ("rule", "Rule"), ...}``."""
    return {name: (kind.unit, kind.unit_label) for name, kind in load_kinds().items()}
