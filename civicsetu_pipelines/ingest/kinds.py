"""Kinds of legal documents, as data: ``data/kinds.yaml``.

Pure domain code. A kind (``act``, ``rules``, ``judgment`` ...) says what its numbered units are
called, whether they are case law, whether its margin titles come first, and the signals that
name it in a document's first pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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
    guidance: bool = False
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


FORM_UNIT = "form"  # forms, annexures, schedules, model agreements (ingest.legal_structure)


@dataclass(frozen=True)
class Authority:
    """Where a unit stands in the order of legal force (``authority`` in kinds.yaml)."""

    tier: int  # 1 = strongest
    tiers: int  # how many tiers there are
    name: str  # the tier's kinds ("act", "order/notification/circular", ..., "form")

    @property
    def strength(self) -> float:
        """1.0 for the strongest tier down to 0.0 for the weakest."""
        return (self.tiers - self.tier) / max(1, self.tiers - 1)


@cache
def authority_tiers(path: Path = KINDS_YAML) -> dict[str, Authority]:
    """Kind name (and ``form``) -> its :class:`Authority`; every kind in exactly one tier."""
    tiers = read_data_yaml(path, "authority") or []
    out: dict[str, Authority] = {}
    for index, names in enumerate(tiers, start=1):
        for name in names:
            if name in out:
                raise ValueError(f"{path}: authority: {name!r} is in two tiers")
            out[name] = Authority(index, len(tiers), "/".join(str(n) for n in names))
    missing = sorted((set(load_kinds(path)) | {FORM_UNIT}) - set(out))
    if missing:
        raise ValueError(f"{path}: authority: no tier for {', '.join(missing)}")
    unknown = sorted(set(out) - set(load_kinds(path)) - {FORM_UNIT})
    if unknown:
        raise ValueError(f"{path}: authority: {', '.join(unknown)} is not a kind")
    return out


def authority_of(kind: str, unit: str, asked: frozenset[str] = frozenset()) -> Authority:
    """The authority of a unit of a document of ``kind``: a form (annexure, schedule, model
    agreement) ranks as ``form`` whatever its document; an unknown kind ranks with forms. A tier
    the question itself asks about (``asked``, from :func:`kinds_asked_for`) ranks first."""
    tiers = authority_tiers()
    found = tiers[FORM_UNIT] if unit == FORM_UNIT or kind not in tiers else tiers[kind]
    if asked and (found.name in asked or kind in asked):
        return Authority(1, found.tiers, found.name)
    return found


@cache
def _asked_patterns(path: Path = KINDS_YAML) -> dict[str, re.Pattern[str]]:
    table = read_data_yaml(path, "asked_for") or {}
    tiers = authority_tiers(path)
    out = {}
    for name, patterns in table.items():
        if name not in tiers:
            raise ValueError(f"{path}: asked_for: {name!r} is not a kind or 'form'")
        try:
            out[name] = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"{path}: asked_for: {name}: {exc}") from None
    return out


def kinds_asked_for(text: str) -> frozenset[str]:
    """The kinds of document (or ``form``) a question names as what it asks about (``asked_for``
    in kinds.yaml): "under Karnataka's draft model agreement" asks about a form."""
    return frozenset(name for name, pattern in _asked_patterns().items() if pattern.search(text))


def kind_names() -> tuple[str, ...]:
    return tuple(load_kinds())


def is_case_law(kind: str) -> bool:
    """Whether documents of ``kind`` are case law (a judgment), not legislation."""
    found = load_kinds().get(kind)
    return found is not None and found.case_law


def citation_role(kind: str, unit: str) -> str:
    """What a cited unit is to a reader: ``law``, ``case law`` (a judgment), ``guidance`` (an
    FAQ) or ``form`` (a form, annexure, schedule or model agreement)."""
    found = load_kinds().get(kind)
    if unit == FORM_UNIT:
        return "form"
    if found is not None and found.case_law:
        return "case law"
    if found is not None and found.guidance:
        return "guidance"
    return "law"


def unit_words() -> dict[str, tuple[str, str]]:
    """Kind -> (unit, Unit label): ``{"rules": ("rule", "Rule"), ...}``."""
    return {name: (kind.unit, kind.unit_label) for name, kind in load_kinds().items()}
