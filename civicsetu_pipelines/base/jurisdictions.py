"""The jurisdictions of Indian law, as data: ``data/jurisdictions.yaml``.

Pure domain code. The Union, the 28 states and 8 union territories, and union territories merged
since their gazettes were published. A jurisdiction is named by its code (``UTTAR_PRADESH``), its
ISO 3166-2:IN code (``IN-UP``) or an alias (``Orissa``, ``UP``); :func:`jurisdiction_code` turns
any of them into the code, and refuses an unknown name with the nearest known ones. Each state
and union territory also carries its GeoNames first-order division code for India
(``geonames_admin1``), by which the cities of GeoNames are read as naming their state.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from civicsetu_pipelines.base.files import read_data_entries
from civicsetu_pipelines.base.settings import DATA_DIR

JURISDICTIONS_YAML = DATA_DIR / "jurisdictions.yaml"
_CODE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_GEONAMES_ADMIN1 = re.compile(r"^[0-9]{2}$")


class UnknownJurisdictionError(ValueError):
    """A name that is no jurisdiction's code, ISO code or alias."""


class Jurisdiction(BaseModel):
    """One jurisdiction (immutable)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    name: str = Field(min_length=1)
    kind: Literal["union", "state", "union_territory"]
    iso: str
    aliases: tuple[str, ...] = ()
    merged_on: dt.date | None = None
    merged_into: str | None = None
    # GeoNames admin1 code of India ("09" is Gujarat): the cities GeoNames places in it are in it
    geonames_admin1: str | None = None

    @field_validator("code")
    @classmethod
    def _code(cls, value: str) -> str:
        if not _CODE.match(value):
            raise ValueError(f"code must be UPPER_SNAKE, got {value!r}")
        return value

    @field_validator("geonames_admin1")
    @classmethod
    def _geonames_admin1(cls, value: str | None) -> str | None:
        if value is not None and not _GEONAMES_ADMIN1.match(value):
            raise ValueError(f"geonames_admin1 must be two digits (a quoted string), got {value!r}")
        return value

    @property
    def names(self) -> tuple[str, ...]:
        """Every name it answers to: code, ISO code, display name and aliases."""
        return (self.code, self.iso, self.name, *self.aliases)


def name_key(name: str) -> str:
    """A name as a comparable key: case, spaces, hyphens, underscores and ``&`` do not matter
    (``Tamil-Nadu``, ``tamil nadu`` and ``TAMIL_NADU`` are one key; ``IN-UP`` is ``IN_UP``)."""
    return re.sub(r"[\s_\-]+", "_", name.strip().replace("&", " and ")).upper()


class Jurisdictions:
    """All jurisdictions, by code and by every name."""

    def __init__(self, items: list[Jurisdiction], source: Path) -> None:
        self.items = tuple(items)
        self.by_code = {j.code: j for j in items}
        self._by_name: dict[str, str] = {}
        for item in items:
            for name in item.names:
                key = name_key(name)
                other = self._by_name.get(key)
                if other is not None and other != item.code:
                    raise ValueError(f"{source}: the name {name!r} is both {other} and {item.code}")
                self._by_name[key] = item.code
        for item in items:
            if item.merged_into is not None and item.merged_into not in self.by_code:
                raise ValueError(f"{source}: {item.code} merged into unknown {item.merged_into}")
        # GeoNames admin1 code -> jurisdiction code: one each, and only for a current state or UT
        self.by_geonames_admin1: dict[str, str] = {}
        for item in items:
            admin1 = item.geonames_admin1
            if admin1 is None:
                continue
            if item.kind == "union" or item.merged_into is not None:
                raise ValueError(
                    f"{source}: {item.code} has geonames_admin1 {admin1!r}, but only a current "
                    "state or union territory has one"
                )
            other = self.by_geonames_admin1.get(admin1)
            if other is not None:
                raise ValueError(
                    f"{source}: geonames_admin1 {admin1!r} is both {other} and {item.code}"
                )
            self.by_geonames_admin1[admin1] = item.code

    def code(self, name: str) -> str:
        """The code of the jurisdiction ``name`` names; :class:`UnknownJurisdictionError`
        (naming the closest codes) when none does."""
        found = self._by_name.get(name_key(str(name)))
        if found is None:
            close = difflib.get_close_matches(name_key(str(name)), list(self.by_code), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownJurisdictionError(
                f"unknown jurisdiction {name!r}: not a code, ISO 3166-2:IN code or alias in "
                f"{JURISDICTIONS_YAML.name}{hint}"
            )
        return found

    def get(self, name: str) -> Jurisdiction:
        return self.by_code[self.code(name)]


@cache
def load_jurisdictions(path: Path = JURISDICTIONS_YAML) -> Jurisdictions:
    """Load and validate the jurisdiction table (cached); errors name the file and entry."""
    items = read_data_entries(path, "jurisdictions", Jurisdiction, "jurisdiction")
    return Jurisdictions(items, Path(path))


def jurisdiction_code(name: str) -> str:
    """The code of the jurisdiction ``name`` names (code, ISO code or alias)."""
    return load_jurisdictions().code(name)
