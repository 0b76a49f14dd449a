"""Indian places and jurisdiction names: the states and union territories, the spellings people
write, the jurisdiction codes of the corpus and where a text names a place.

Pure domain code (no Dagster, no database), compiled once at import:

* :data:`ACT_JURISDICTION` -- the jurisdiction of the RERA Act itself (``CENTRAL``);
* :func:`place_mentions` -- the Indian states and union territories a text names, with offsets
  (``Gujarat``, ``Gujrat``, ``U.P.``, ``J&K``);
* :func:`known_index` and :func:`jurisdiction_key` -- a caller's jurisdiction names and one
  name as a comparable key (case, spaces, hyphens, ``Centre`` for ``CENTRAL``, place aliases);
* :data:`PLACE_BY_CODE` -- each place by its code, for its display name.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

ACT_JURISDICTION = "CENTRAL"


class Place(NamedTuple):
    code: str  # UPPER_SNAKE, like the registry's Jurisdiction values
    display: str


# Indian states and union territories: display name and other spellings people write.
_PLACES: dict[str, tuple[str, ...]] = {
    "Andhra Pradesh": (),
    "Arunachal Pradesh": (),
    "Assam": (),
    "Bihar": (),
    "Chhattisgarh": ("Chattisgarh", "Chhatisgarh"),
    "Goa": (),
    "Gujarat": ("Gujrat",),
    "Haryana": (),
    "Himachal Pradesh": (),
    "Jharkhand": (),
    "Karnataka": (),
    "Kerala": (),
    "Madhya Pradesh": (),
    "Maharashtra": ("Maharastra",),
    "Manipur": (),
    "Meghalaya": (),
    "Mizoram": (),
    "Nagaland": (),
    "Odisha": ("Orissa",),
    "Punjab": (),
    "Rajasthan": (),
    "Sikkim": (),
    "Tamil Nadu": ("Tamilnadu",),
    "Telangana": (),
    "Tripura": (),
    "Uttar Pradesh": (),
    "Uttarakhand": ("Uttaranchal",),
    "West Bengal": (),
    "Andaman and Nicobar Islands": ("Andaman and Nicobar", "Andaman"),
    "Chandigarh": (),
    "Dadra and Nagar Haveli and Daman and Diu": (
        "Dadra and Nagar Haveli",
        "Daman and Diu",
    ),
    "Delhi": ("New Delhi", "NCT of Delhi"),
    "Jammu and Kashmir": ("J&K", "J & K"),
    "Ladakh": (),
    "Lakshadweep": (),
    "Puducherry": ("Pondicherry",),
}


def _code(name: str) -> str:
    return re.sub(r"[\s_-]+", "_", name.strip().replace("&", " and ")).upper()


_PLACE_BY_KEY: dict[str, Place] = {}
_PLACE_ALTERNATIVES: list[str] = []
for _display, _aliases in _PLACES.items():
    _place = Place(_code(_display), _display)
    for _name in (_display, *_aliases):
        _PLACE_BY_KEY[_code(_name)] = _place
        _PLACE_ALTERNATIVES.append(_name)
_PLACE_BY_KEY["UP"] = _PLACE_BY_KEY["UTTAR_PRADESH"]  # accepted as a jurisdiction argument only
PLACE_BY_CODE: dict[str, Place] = {p.code: p for p in _PLACE_BY_KEY.values()}
_JURISDICTION_ALIASES = {"CENTRE": "CENTRAL", "CENTER": "CENTRAL", "UNION": "CENTRAL"}


def _place_regex(name: str) -> str:
    parts = re.split(r"(\s+|&)", name)
    out = []
    for part in parts:
        if not part:
            continue
        if part.isspace():
            out.append(r"\s*" if "&" in name else r"\s+")
        elif part == "&" or part.lower() == "and":
            out.append(r"(?:and|&)")
        else:
            out.append(re.escape(part))
    return "".join(out)


_PLACE_FIRST = "".join(sorted({n[0].lower() for n in _PLACE_ALTERNATIVES} | {"u"}))
_PLACE_RE = re.compile(
    rf"(?<![\w&])(?=[{_PLACE_FIRST}])(?:"
    + "|".join(_place_regex(n) for n in sorted(_PLACE_ALTERNATIVES, key=len, reverse=True))
    + r"|(?-i:U\.\s?P\.))(?![\w&])",
    re.IGNORECASE,
)


def _place_of(matched: str) -> Place:
    key = _code(re.sub(r"\s+", " ", matched))
    if key.replace(".", "").replace("_", "") == "UP":
        return PLACE_BY_CODE["UTTAR_PRADESH"]
    return _PLACE_BY_KEY[key]


@lru_cache(maxsize=64)
def known_index(known: tuple[str, ...]) -> dict[str, str]:
    """Normalized key -> the caller's own spelling of each known jurisdiction."""
    return {_code(str(k)): str(k) for k in known}


def jurisdiction_key(value: str) -> str:
    """``value`` as a key of :func:`known_index` (``Centre`` is ``CENTRAL``, ``Orissa`` is
    ``ODISHA``)."""
    key = _code(value)
    key = _JURISDICTION_ALIASES.get(key, key)
    place = _PLACE_BY_KEY.get(key)
    return place.code if place else key


class PlaceMention(NamedTuple):
    """A place named in a text, at ``text[start:end]``."""

    start: int
    end: int
    place: Place


def place_mentions(text: str) -> list[PlaceMention]:
    """The places ``text`` names, in order, with their offsets."""
    return [
        PlaceMention(m.start(), m.end(), _place_of(m.group())) for m in _PLACE_RE.finditer(text)
    ]
