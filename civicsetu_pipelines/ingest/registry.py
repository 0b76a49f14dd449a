"""The document registry: which legal documents exist, where to get them, which pages to read.

Pure domain code (no Dagster). The registry is data, kept in two YAML files shipped with the
package:

* ``data/documents.yaml`` -- the default documents (each pinned by sha256 to a corpus file);
* ``data/seed_documents.yaml`` -- further states, off unless ``CIVICSETU_ENABLE_SEED_STATES``
  is set (or ``include_seed=True`` is passed); they have no pin yet.

Everything is validated on load; every error names the YAML file and the document key.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from civicsetu_pipelines.base import (
    DATA_DIR,
    DocumentError,
    Settings,
    UnknownJurisdictionError,
    jurisdiction_code,
    write_atomic,
)
from civicsetu_pipelines.ingest.kinds import kind_names

DOCUMENTS_YAML = DATA_DIR / "documents.yaml"
SEED_DOCUMENTS_YAML = DATA_DIR / "seed_documents.yaml"

SCHEMA_VERSION = 1

# Tesseract language codes we expect for Indian legal texts ("kan+eng" style combos allowed).
KNOWN_LANGUAGES = frozenset(
    {"eng", "hin", "kan", "guj", "mar", "tam", "tel", "mal", "ben", "pan", "ori", "urd", "asm"}
)

_KEY_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_LANGUAGE_RE = re.compile(r"^[a-z]{3}(?:\+[a-z]{3})*$")


class Status(StrEnum):
    IN_FORCE = "in_force"
    DRAFT = "draft"


class RegistryError(ValueError):
    """The registry files are missing or invalid. The message names the file and document."""


class PageRangeError(DocumentError, ValueError):
    """A document's page ranges do not fit the actual PDF. The message names the document."""

    template = "document {key!r}: {reason}"


class UnknownDocumentError(KeyError):
    """``Registry.get`` with a key that is not registered. ``str()`` is the plain message."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def page_spans(text: str) -> list[tuple[int, int]]:
    """``"42-80"`` or ``"1-3,7"`` as 1-based inclusive ``(first, last)`` spans, sorted; a
    ``ValueError`` says what is wrong."""
    spans: list[tuple[int, int]] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match:
            raise ValueError("expected page ranges such as 42-80 or 1-3,7")
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if first < 1 or last < first:
            raise ValueError(f"{part.strip()!r} is not a range of pages counted from 1")
        spans.append((first, last))
    return sorted(spans)


def user_registry_path(state_dir: Path | None = None) -> Path:
    """The user registry of ``civicsetu documents add``: ``<state>/registry/documents.yaml``."""
    return (state_dir or Settings.from_env().state_dir) / "registry" / "documents.yaml"


def _check_url(value: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("URL must be a non-empty string")
    if any(ch.isspace() for ch in value):
        raise ValueError(f"URL must be percent-encoded (contains whitespace): {value!r}")
    parts = urlsplit(value)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise ValueError(f"URL must be an absolute http(s) URL: {value!r}")
    return value


_UNIT_RANGE = re.compile(r"^\s*(\d{1,3})\s*(?:-\s*(\d{1,3})\s*)?$")


class Commencement(BaseModel):
    """Units of a document that came into force later than the document, by a notification:
    ``{units: "3-19, 40", from: 2017-05-01, by: rera_commencement_notification_2017}``."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    units: str = Field(description="Unit numbers and ranges: '3-19, 40, 59-70'.")
    from_date: dt.date = Field(alias="from")
    by: str = Field(description="The key of the registered document that appointed the date.")

    @field_validator("units")
    @classmethod
    def _units(cls, value: str) -> str:
        for part in value.split(","):
            match = _UNIT_RANGE.match(part)
            if not match or int(match.group(2) or match.group(1)) < int(match.group(1)):
                raise ValueError(f"units must be numbers and ranges like '3-19, 40', got {value!r}")
        return value

    def covers(self, number: str) -> bool:
        """Whether unit ``number`` ("18", "18A") is among :attr:`units`."""
        digits = re.match(r"\d+", number or "")
        if digits is None:
            return False
        n = int(digits.group())
        for part in self.units.split(","):
            match = _UNIT_RANGE.match(part)
            assert match is not None
            if int(match.group(1)) <= n <= int(match.group(2) or match.group(1)):
                return True
        return False


class DocumentSpec(BaseModel):
    """One legal document in the registry (immutable)."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    key: str = Field(description="Stable identifier, lower_snake_case; used as asset partition.")
    title: str = Field(min_length=1)
    jurisdiction: str = Field(description="A code, ISO 3166-2:IN code or alias; stored as code.")
    doc_type: str = Field(description="A kind in data/kinds.yaml.")
    effective_date: dt.date
    source_url: str = Field(description="Official source to cite.")
    download_urls: tuple[str, ...] = ()
    filename: str | None = Field(default=None, description="Name to look for in mirror dirs.")
    sha256: str | None = Field(default=None, description="Pinned content hash; None = unpinned.")
    page_ranges: tuple[tuple[StrictInt, StrictInt], ...] | None = Field(
        default=None, description="1-based inclusive [first, last] ranges; None = all pages."
    )
    language: str = "eng"
    status: Status = Status.IN_FORCE
    notes: str = ""
    commencement: tuple[Commencement, ...] = Field(
        default=(), description="Units in force later than effective_date, and from when."
    )
    amends: tuple[str, ...] = Field(
        default=(),
        description="Keys of the documents whose units this one amends (its "
        "instructions are read from its text and applied from its date).",
    )
    repeals: tuple[str, ...] = Field(
        default=(), description="Keys of the documents this one repeals whole, from its date."
    )

    @field_validator("key")
    @classmethod
    def _key_format(cls, value: str) -> str:
        if not _KEY_RE.match(value):
            raise ValueError(f"key must be lower_snake_case ([a-z][a-z0-9_]*), got {value!r}")
        return value

    @field_validator("jurisdiction")
    @classmethod
    def _jurisdiction(cls, value: str) -> str:
        try:
            return jurisdiction_code(value)
        except UnknownJurisdictionError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("doc_type")
    @classmethod
    def _doc_type(cls, value: str) -> str:
        if value not in kind_names():
            raise ValueError(f"doc_type must be one of {', '.join(kind_names())}, got {value!r}")
        return value

    @field_validator("effective_date", mode="before")
    @classmethod
    def _iso_date(cls, value: Any) -> dt.date:
        if isinstance(value, dt.datetime):
            raise ValueError(f"effective_date must be a date, not a datetime: {value!r}")
        if isinstance(value, dt.date):
            return value
        if isinstance(value, str):
            try:
                return dt.date.fromisoformat(value.strip())
            except ValueError:
                raise ValueError(
                    f"effective_date must be an ISO date YYYY-MM-DD, got {value!r}"
                ) from None
        raise ValueError(f"effective_date must be an ISO date YYYY-MM-DD, got {value!r}")

    @field_validator("source_url")
    @classmethod
    def _source_url(cls, value: str) -> str:
        parts = urlsplit(value) if isinstance(value, str) else None
        if parts is not None and parts.scheme == "file" and parts.path.startswith("/"):
            return value  # a document added from a local file cites that file
        return _check_url(value)

    @field_validator("download_urls")
    @classmethod
    def _download_urls(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for url in value:
            _check_url(url)
        if len(set(value)) != len(value):
            raise ValueError("download_urls contains duplicates")
        return value

    @field_validator("filename")
    @classmethod
    def _filename(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value or value in {".", ".."} or "/" in value or "\\" in value:
            raise ValueError(f"filename must be a bare file name (no directories), got {value!r}")
        return value

    @field_validator("sha256", mode="before")
    @classmethod
    def _sha256(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError(f"sha256 must be 64 hex characters, got {value!r}")
        normalized = value.strip().lower()
        if not _SHA256_RE.match(normalized):
            raise ValueError(f"sha256 must be 64 hex characters, got {value!r}")
        return normalized

    @field_validator("page_ranges")
    @classmethod
    def _page_ranges(
        cls, value: tuple[tuple[int, int], ...] | None
    ) -> tuple[tuple[int, int], ...] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("page_ranges must be null (all pages) or a non-empty list")
        for first, last in value:
            if first < 1:
                raise ValueError(f"page range [{first}, {last}]: pages are 1-based (first >= 1)")
            if first > last:
                raise ValueError(f"page range [{first}, {last}]: first page is after last page")
        ordered = sorted(value)
        for (a_first, a_last), (b_first, b_last) in zip(ordered, ordered[1:], strict=False):
            if b_first <= a_last:
                raise ValueError(
                    f"page ranges [{a_first}, {a_last}] and [{b_first}, {b_last}] overlap"
                )
        return value

    @field_validator("language")
    @classmethod
    def _language(cls, value: str) -> str:
        if not _LANGUAGE_RE.match(value):
            raise ValueError(
                f"language must be a tesseract code like 'eng' or 'kan+eng': {value!r}"
            )
        unknown = [code for code in value.split("+") if code not in KNOWN_LANGUAGES]
        if unknown:
            raise ValueError(
                f"unknown language code(s) {unknown}; known: {', '.join(sorted(KNOWN_LANGUAGES))}"
            )
        return value

    @model_validator(mode="after")
    def _has_a_source(self) -> Self:
        if not self.download_urls and not self.filename:
            raise ValueError("needs at least one of download_urls or filename")
        return self

    @property
    def is_pinned(self) -> bool:
        return self.sha256 is not None

    def in_force_from(self, number: str) -> dt.date:
        """The day top-level unit ``number`` came into force: its commencement's date, else the
        document's ``effective_date``."""
        dates = [c.from_date for c in self.commencement if c.covers(number)]
        return max(dates) if dates else self.effective_date

    def pages_to_ingest(self, page_count: int) -> list[int]:
        """0-based page indexes to ingest from a PDF with ``page_count`` pages.

        ``page_ranges`` None means every page. A range that runs past the end is clipped to the
        last page; a range that starts past the end is an error naming the document (the PDF is
        not the one the registry describes).
        """
        if page_count < 0:
            raise ValueError(f"page_count must be >= 0, got {page_count}")
        if self.page_ranges is None:
            return list(range(page_count))
        pages: set[int] = set()
        for first, last in self.page_ranges:
            if first > page_count:
                raise PageRangeError(
                    self.key,
                    f"page range [{first}, {last}] starts beyond the PDF's {page_count} page(s); "
                    "the file does not match the registry's page_ranges",
                )
            pages.update(range(first - 1, min(last, page_count)))
        return sorted(pages)


class Registry(BaseModel):
    """The validated set of documents, in file order (immutable)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    specs: tuple[DocumentSpec, ...]
    sources: tuple[Path, ...] = ()

    @model_validator(mode="after")
    def _unique_keys(self) -> Self:
        seen: set[str] = set()
        dupes: set[str] = set()
        for spec in self.specs:
            (dupes if spec.key in seen else seen).add(spec.key)
        if dupes:
            raise ValueError(f"duplicate document keys: {', '.join(sorted(dupes))}")
        for spec in self.specs:
            for named in (*spec.amends, *spec.repeals):
                if named not in seen or named == spec.key:
                    raise ValueError(f"{spec.key}: amends or repeals {named!r}, which is not "
                                     "another registered document")  # fmt: skip
        return self

    def __len__(self) -> int:
        return len(self.specs)

    @functools.cached_property
    def _by_key(self) -> dict[str, DocumentSpec]:
        # a state of 10,000 orders: one lookup by key was a scan (0.37 ms; 3.7 s for each)
        return {spec.key: spec for spec in self.specs}

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def keys(self) -> list[str]:
        return [spec.key for spec in self.specs]

    def jurisdictions(self) -> list[str]:
        """Sorted jurisdiction names that have at least one document."""
        return sorted({spec.jurisdiction for spec in self.specs})

    def documents(self, jurisdiction: str | None = None) -> list[DocumentSpec]:
        """All documents, or those of one jurisdiction named by code, ISO code or alias
        (unknown names raise :class:`UnknownJurisdictionError`, a ``ValueError``)."""
        if jurisdiction is None:
            return list(self.specs)
        wanted = jurisdiction_code(jurisdiction)
        return [spec for spec in self.specs if spec.jurisdiction == wanted]

    def get(self, key: str) -> DocumentSpec:
        spec = self._by_key.get(key)
        if spec is not None:
            return spec
        raise UnknownDocumentError(
            f"unknown document key {key!r}; valid keys: {', '.join(sorted(self.keys()))}"
        )


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """SafeLoader that rejects duplicate mapping keys instead of keeping the last one; on
    libyaml's parser when PyYAML has it (a user registry of 10,000 documents: 11.4 s to parse
    with the Python one)."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


def _construct_timestamp_as_text(loader: _UniqueKeyLoader, node: yaml.ScalarNode) -> str:
    # Keep dates as text so DocumentSpec validates them (with the document key in the error)
    # instead of PyYAML raising a bare ValueError for e.g. 2016-13-01.
    return str(loader.construct_scalar(node))


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)
_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp_as_text)


def _format_validation_error(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "document"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] not in {"missing", "value_error"} and "input" in item:
            shown = repr(item["input"])
            message += f" (got {shown[:80] + '...' if len(shown) > 80 else shown})"
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RegistryError(f"{path}: cannot read registry file: {exc}") from exc


def read_entries(path: Path, text: str | None = None) -> list[Any]:
    """The raw ``documents`` entries of one registry file (its ``text`` when already read),
    its shape checked (errors name it). A large file's entries are kept beside it once read
    (:func:`_remembered_entries`): the same text is not parsed as YAML again."""
    if text is None:
        text = _read_text(path)
    if len(text.encode("utf-8")) < REMEMBER_MIN_BYTES:  # a small file: parsed, nothing kept
        return _yaml_entries(path, text)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    remembered = _remembered_entries(path, digest)
    if remembered is not None:
        return remembered
    entries = _yaml_entries(path, text)
    _remember_entries(path, text, digest, entries)
    return entries


# A registry file of more than this many bytes (about 1,000 documents: `documents add` and a
# watched source grow the user registry to a state's size) has its entries kept beside it as
# JSON, keyed by the sha256 of its text: 10,000 entries parse as YAML in ~2 s (libyaml, the
# constructor in Python), read as JSON in ~0.1 s; every `documents add`, run and command reads
# the registry (issue 46). The loader keeps dates as text (:func:`_construct_timestamp_as_text`),
# so an entry is strings, numbers, booleans, lists and mappings: JSON holds it as it is.
REMEMBER_MIN_BYTES = 256 * 1024
_REMEMBERED_FORMAT = 1  # bumped when what YAML entries become changes


def _remembered_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.entries.json")


def _remembered_entries(path: Path, digest: str) -> list[Any] | None:
    """The entries kept for the text of sha256 ``digest``, or None (none kept, another text)."""
    try:
        kept = json.loads(_remembered_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if kept.get("format") != _REMEMBERED_FORMAT or kept.get("sha256") != digest:
        return None
    return list(kept["entries"])


def _remember_entries(path: Path, text: str, digest: str, entries: list[Any]) -> None:
    """Keep a large file's entries beside it; a directory that cannot be written to is left
    as it is (the file is parsed again next time)."""
    if len(text.encode("utf-8")) < REMEMBER_MIN_BYTES:
        return
    try:
        body = json.dumps({"format": _REMEMBERED_FORMAT, "sha256": digest, "entries": entries},
                          ensure_ascii=False)  # fmt: skip
        # only what JSON gives back as it was (the loader keeps dates as text; a date object
        # a writer passed, a key that is not text: not remembered, the file is parsed instead)
        if json.loads(body)["entries"] != entries:
            return
        write_atomic(_remembered_path(path), body.encode("utf-8"))
    except (OSError, TypeError, ValueError):
        return


def write_registry_file(path: Path, header: str, entries: list[dict[str, Any]]) -> None:
    """Write a registry file (``header`` comment lines, then the schema version and
    ``entries``) in one atomic replace, its entries remembered as :func:`read_entries` would
    remember them (the next read does not parse it)."""
    # libyaml's emitter when PyYAML has it: `documents add` rewrites the whole user registry
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    body = yaml.dump({"schema_version": SCHEMA_VERSION, "documents": entries}, Dumper=dumper,
                     sort_keys=False, allow_unicode=True)  # fmt: skip
    text = header + body
    write_atomic(path, text.encode("utf-8"))
    _remember_entries(path, text, hashlib.sha256(text.encode("utf-8")).hexdigest(), entries)


def _yaml_entries(path: Path, text: str) -> list[Any]:
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        raise RegistryError(f"{path}: invalid YAML: {exc}") from exc
    if not isinstance(data, Mapping) or "documents" not in data:
        raise RegistryError(f"{path}: expected a mapping with a 'documents' list at top level")
    version = data.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise RegistryError(
            f"{path}: schema_version {version!r} not supported (expected {SCHEMA_VERSION})"
        )
    unknown = sorted(set(data) - {"documents", "schema_version"})
    if unknown:
        raise RegistryError(f"{path}: unknown top-level field(s): {', '.join(map(str, unknown))}")
    entries = data["documents"]
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise RegistryError(f"{path}: 'documents' must be a list")
    return entries


# Parsed registry files by (path, sha256 of their text): a run reads the registry a few dozen
# times (24 in a cold materialization of two partitions, 2.2 s with PyYAML's Python loader);
# an edited file has another hash and is parsed again. The specs are frozen.
_PARSED: dict[tuple[str, str], tuple[DocumentSpec, ...]] = {}
_PARSED_MAX = 64


def parse_registry_file(path: Path | str) -> list[DocumentSpec]:
    """Parse and validate one registry YAML file (keys unique within the file); a file read
    before with the same text is not parsed again."""
    path = Path(path)
    text = _read_text(path)
    key = (str(path), hashlib.sha256(text.encode("utf-8")).hexdigest())
    cached = _PARSED.get(key)
    if cached is not None:
        return list(cached)
    specs = _parse_registry_file(path, text)
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[key] = tuple(specs)
    return specs


def _parse_registry_file(path: Path, text: str) -> list[DocumentSpec]:
    specs: list[DocumentSpec] = []
    for index, entry in enumerate(read_entries(path, text), start=1):
        if not isinstance(entry, Mapping):
            raise RegistryError(f"{path}: document #{index} must be a mapping, got {entry!r}")
        key = entry.get("key")
        label = f"document {key!r}" if isinstance(key, str) and key else f"document #{index}"
        try:
            specs.append(DocumentSpec.model_validate(dict(entry)))
        except ValidationError as exc:
            raise RegistryError(f"{path}: {label}: {_format_validation_error(exc)}") from None
    seen: dict[str, int] = {}
    for index, spec in enumerate(specs, start=1):
        if spec.key in seen:
            raise RegistryError(
                f"{path}: document {spec.key!r}: duplicate key (documents #{seen[spec.key]} "
                f"and #{index})"
            )
        seen[spec.key] = index
    return specs


def _combine(files: Iterable[tuple[Path, list[DocumentSpec]]]) -> Registry:
    owner: dict[str, Path] = {}
    pin_owner: dict[str, tuple[str, Path]] = {}
    specs: list[DocumentSpec] = []
    sources: list[Path] = []
    for path, file_specs in files:
        sources.append(path)
        for spec in file_specs:
            if spec.key in owner:
                raise RegistryError(
                    f"{path}: document {spec.key!r}: duplicate key, already defined in "
                    f"{owner[spec.key]}"
                )
            owner[spec.key] = path
            if spec.sha256 is not None:
                if spec.sha256 in pin_owner:
                    other_key, other_path = pin_owner[spec.sha256]
                    raise RegistryError(
                        f"{path}: document {spec.key!r}: sha256 {spec.sha256} is already pinned "
                        f"by document {other_key!r} in {other_path}"
                    )
                pin_owner[spec.sha256] = (spec.key, path)
            specs.append(spec)
    keys = set(owner)
    for spec in specs:
        for item in spec.commencement:
            if item.by not in keys:
                raise RegistryError(f"{owner[spec.key]}: document {spec.key!r}: commencement by "
                                    f"{item.by!r}, which is not a registered document")  # fmt: skip
    return Registry(specs=tuple(specs), sources=tuple(sources))


def load_registry(
    include_seed: bool | None = None,
    paths: Sequence[Path | str] | None = None,
    seed_paths: Sequence[Path | str] | None = None,
) -> Registry:
    """Load and validate the document registry.

    ``paths`` are the default registry files (default: ``CIVICSETU_REGISTRY``, else the packaged
    ``documents.yaml``; either way followed by the user registry of ``civicsetu documents add``
    when it exists);
    ``seed_paths`` are read only when seed states are enabled (default: the packaged
    ``seed_documents.yaml``). ``include_seed=None`` follows ``Settings.from_env()``.
    """
    settings = Settings.from_env()
    if include_seed is None:
        include_seed = settings.enable_seed_states
    if paths is None:
        paths = settings.registry_paths or (DOCUMENTS_YAML,)
        user = user_registry_path(settings.state_dir)
        if user.is_file():
            paths = (*paths, user)
    files = [Path(p) for p in paths]
    if include_seed:
        files += [
            Path(p) for p in (seed_paths if seed_paths is not None else (SEED_DOCUMENTS_YAML,))
        ]
    return _combine((path, parse_registry_file(path)) for path in files)


# -- Curated rule-to-Act derivations (data/derivations.yaml) -----------------------------------

DERIVATIONS_YAML = DATA_DIR / "derivations.yaml"
_RULE_LABEL_RE = re.compile(r"^Rule \d{1,3}[A-Z]?$")
_SECTION_LABEL_RE = re.compile(r"^Section \d{1,3}[A-Z]?(?:\([0-9a-z]{1,3}\))*$")


class CuratedDerivation(BaseModel):
    """A rule whose text names no Act section, mapped by hand to the sections it implements."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    document: str
    rule: str
    sections: tuple[str, ...] = Field(min_length=1)
    note: str = Field(min_length=20)

    @field_validator("rule")
    @classmethod
    def _rule_label(cls, value: str) -> str:
        if not _RULE_LABEL_RE.match(value):
            raise ValueError(f"rule must look like 'Rule 12', not {value!r}")
        return value

    @field_validator("sections")
    @classmethod
    def _section_labels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [label for label in value if not _SECTION_LABEL_RE.match(label)]
        if bad:
            raise ValueError(f"sections must look like 'Section 9(6)', not {bad}")
        return value


def load_curated_derivations(path: Path | str = DERIVATIONS_YAML) -> tuple[CuratedDerivation, ...]:
    """Load and validate the curated derivation table.

    Documents must be in the packaged registry (default and seed files); each (document, rule)
    appears once. Errors name the file and the entry.
    """
    path = Path(path)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)  # noqa: S506
    except (OSError, yaml.YAMLError) as exc:
        raise RegistryError(f"{path}: cannot read curated derivations: {exc}") from exc
    if not isinstance(data, Mapping) or set(data) != {"schema_version", "derivations"}:
        raise RegistryError(f"{path}: expected exactly 'schema_version' and 'derivations'")
    if data["schema_version"] != SCHEMA_VERSION:
        raise RegistryError(f"{path}: schema_version {data['schema_version']!r} not supported")
    known = set(load_registry(include_seed=True, paths=(DOCUMENTS_YAML,)).keys())
    entries: list[CuratedDerivation] = []
    seen: set[tuple[str, str]] = set()
    for index, entry in enumerate(data["derivations"] or [], start=1):
        where = f"{path}: derivation #{index}"
        if not isinstance(entry, Mapping):
            raise RegistryError(f"{where} must be a mapping, got {entry!r}")
        try:
            item = CuratedDerivation.model_validate(dict(entry))
        except ValidationError as exc:
            raise RegistryError(f"{where}: {_format_validation_error(exc)}") from None
        if item.document not in known:
            raise RegistryError(f"{where}: unknown document {item.document!r}")
        if (item.document, item.rule) in seen:
            raise RegistryError(f"{where}: {item.document} {item.rule} is listed twice")
        seen.add((item.document, item.rule))
        entries.append(item)
    return tuple(entries)
