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

from civicsetu_pipelines.base import load_jurisdictions, name_key

ACT_JURISDICTION = "CENTRAL"


class Place(NamedTuple):
    code: str  # UPPER_SNAKE, a code of data/jurisdictions.yaml
    display: str


def _written(name: str) -> bool:
    """A name people write in a sentence: not an ISO code ("IN-UP") nor two letters ("UP",
    matched as "U.P." below)."""
    return len(name) > 2 and not name.startswith("IN-")


# Indian states and union territories (data/jurisdictions.yaml): the display name and the other
# spellings people write. ISO codes are not matched in text ("IN-UP"), only as arguments.
_PLACE_BY_KEY: dict[str, Place] = {}
_PLACE_ALTERNATIVES: list[str] = []
for _item in load_jurisdictions().items:
    _place = Place(_item.code, _item.name)
    for _name in _item.names:
        _PLACE_BY_KEY[name_key(_name)] = _place
    if _item.kind != "union":
        _PLACE_ALTERNATIVES += [n for n in (_item.name, *_item.aliases) if _written(n)]
PLACE_BY_CODE: dict[str, Place] = {p.code: p for p in _PLACE_BY_KEY.values()}


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
    key = name_key(re.sub(r"\s+", " ", matched))
    if key.replace(".", "").replace("_", "") == "UP":
        return PLACE_BY_CODE["UTTAR_PRADESH"]
    return _PLACE_BY_KEY[key]


@lru_cache(maxsize=64)
def known_index(known: tuple[str, ...]) -> dict[str, str]:
    """Normalized key -> the caller's own spelling of each known jurisdiction."""
    return {name_key(str(k)): str(k) for k in known}


def jurisdiction_key(value: str) -> str:
    """``value`` as a key of :func:`known_index` (``Centre`` is ``CENTRAL``, ``Orissa`` is
    ``ODISHA``, ``IN-UP`` is ``UTTAR_PRADESH``)."""
    key = name_key(value)
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
