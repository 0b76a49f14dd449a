"""Documents a user registers: ``civicsetu documents add | list | remove``.

Pure domain code (no Dagster). ``add`` checks a PDF (a PDF, not encrypted, not empty, its page
range inside it), copies it into the content-addressed PDF store (``storage/pdfs/<sha256>.pdf``)
and appends it, pinned by sha256, to the user registry ``<state>/registry/documents.yaml``,
which :func:`~civicsetu_pipelines.ingest.registry.load_registry` reads beside the shipped one.
Nothing is written unless every check passes. ``remove`` takes a user document out of the user
registry (a shipped one cannot be removed); the next run retires its rows like any registry
change.
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from civicsetu_pipelines.base import (
    Settings,
    UnknownJurisdictionError,
    jurisdiction_code,
    load_jurisdictions,
    pdf_cache_dir,
    sha256_file,
    write_atomic,
)
from civicsetu_pipelines.ingest.kinds import kind_names
from civicsetu_pipelines.ingest.ocr import tesseract_available
from civicsetu_pipelines.ingest.pages import PdfError, open_pdf
from civicsetu_pipelines.ingest.registry import (
    SCHEMA_VERSION,
    DocumentSpec,
    Registry,
    load_registry,
    page_spans,
    parse_registry_file,
    read_entries,
    user_registry_path,
)

_KEY_WORDS = re.compile(r"[a-z0-9]+")


class AddError(ValueError):
    """A document that cannot be added; the message is one line naming the file and why."""


@dataclass(frozen=True)
class Added:
    """What ``add`` registered, and what the user should know about it."""

    spec: DocumentSpec
    pages: int
    text_layer: bool
    new_jurisdiction: bool
    stored: Path
    notes: tuple[str, ...]


def key_from_title(title: str) -> str:
    """``"Bihar Real Estate Rules, 2017"`` -> ``"bihar_real_estate_rules_2017"``."""
    words = _KEY_WORDS.findall(title.lower())
    key = "_".join(words)[:80].strip("_")
    return key if key and key[0].isalpha() else f"doc_{key}"


def page_ranges_of(text: str, page_count: int) -> tuple[tuple[int, int], ...]:
    """``"3-40,42"`` as registry page ranges, checked against the PDF's ``page_count``."""
    try:
        spans = page_spans(text)
    except ValueError as exc:
        raise AddError(f"--pages {text!r}: {exc}") from None
    last = max(last for _first, last in spans)
    if last > page_count:
        raise AddError(f"--pages {text!r}: page {last} is outside the document, which has "
                       f"{page_count} page(s)")  # fmt: skip
    return tuple(spans)


def _check_pdf(path: Path) -> tuple[int, list[bool]]:
    """Page count and, per page, whether it has a text layer; :class:`AddError` for a file the
    pipeline could not read (the same checks as parsing: :func:`open_pdf`)."""
    if not path.is_file():
        raise AddError(f"{path}: no such file")
    try:
        doc = open_pdf(path.name, path)
    except PdfError as exc:
        raise AddError(f"{path}: {exc.reason}") from None
    try:
        texts = [bool(doc[i].get_text().strip()) for i in range(doc.page_count)]
    finally:
        doc.close()
    return len(texts), texts


def add_document(
    path: Path,
    *,
    jurisdiction: str,
    kind: str,
    title: str,
    key: str | None = None,
    effective_from: dt.date | None = None,
    status: str = "in_force",
    pages: str | None = None,
    language: str = "eng",
    source_url: str | None = None,
    amends: Sequence[str] = (),
    repeals: Sequence[str] = (),
    state_dir: Path | None = None,
) -> Added:
    """Check ``path``, store it and register it in the user registry; nothing is written when
    a check fails (:class:`AddError`, one line)."""
    path = Path(path).resolve()
    try:
        code = jurisdiction_code(jurisdiction)
    except UnknownJurisdictionError as exc:
        raise AddError(str(exc)) from None
    if kind not in kind_names():
        raise AddError(f"unknown kind {kind!r}; known: {', '.join(kind_names())}")
    page_count, text_pages = _check_pdf(path)
    ranges = page_ranges_of(pages, page_count) if pages else None
    chosen = [i for first, last in ranges for i in range(first - 1, last)] if ranges else None
    text_layer = any(text_pages[i] for i in (chosen or range(page_count)))
    sha = sha256_file(path)
    registry = load_registry()
    key = key or key_from_title(title)
    if key in registry:
        raise AddError(f"key {key!r} is already registered; choose another with --key")
    pinned = {spec.sha256: spec.key for spec in registry.documents() if spec.sha256}
    if sha in pinned:
        raise AddError(f"{path}: this file (sha256 {sha[:12]}…) is already registered as "
                       f"{pinned[sha]!r}")  # fmt: skip
    entry: dict[str, Any] = {
        "key": key,
        "title": title,
        "jurisdiction": code,
        "doc_type": kind,
        "effective_date": (effective_from or dt.date.today()).isoformat(),
        "source_url": source_url or path.as_uri(),
        "filename": f"{sha}.pdf",  # its name in the content-addressed store
        "sha256": sha,
        "page_ranges": [list(r) for r in ranges] if ranges else None,
        "language": language,
        "status": status,
        "notes": f"added with `civicsetu documents add` on {dt.date.today().isoformat()} "
        f"from {path}",
    }
    for name, keys in (("amends", amends), ("repeals", repeals)):
        if keys:
            entry[name] = list(keys)
    try:
        spec = DocumentSpec.model_validate(entry)
    except ValueError as exc:
        raise AddError(f"{path}: {_first_error(exc)}") from None
    notes: list[str] = []
    if not text_layer:
        notes.append(f"no text layer: its pages will be OCR'd in {language!r} "
                     f"({_ocr_readiness(language)})")  # fmt: skip
    new_jurisdiction = code not in registry.jurisdictions()
    if new_jurisdiction:
        name = load_jurisdictions().by_code[code].name
        notes.append(f"{name} ({code}) is a new partition: reload definitions in the Dagster UI")
    try:
        Registry(specs=(*registry.specs, spec))  # the registry as a whole still validates
    except ValueError as exc:
        raise AddError(f"{path}: {_first_error(exc)}") from None
    registry_file = user_registry_path(state_dir)
    entries = [*_entries(registry_file), {k: v for k, v in entry.items() if v is not None}]
    stored = pdf_cache_dir(state_dir or Settings.from_env().state_dir) / f"{sha}.pdf"
    if not stored.is_file():
        write_atomic(stored, path.read_bytes())
    _write_entries(registry_file, entries)
    return Added(spec, page_count, text_layer, new_jurisdiction, stored, tuple(notes))


def _ocr_readiness(language: str) -> str:
    """Whether Tesseract and its data for ``language`` ("kan+eng") are installed."""
    if not tesseract_available():
        return "Tesseract is NOT installed: install tesseract-ocr before materializing"
    listed = subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True,
                            check=False, timeout=60).stdout.split()  # fmt: skip
    missing = [code for code in language.split("+") if code not in listed]
    if missing:
        return f"Tesseract has no data for {', '.join(missing)}: install tesseract-ocr-{missing[0]}"
    return "Tesseract and its language data are installed"


def remove_document(key: str, *, state_dir: Path | None = None) -> DocumentSpec:
    """Take ``key`` out of the user registry; :class:`AddError` when it is not there (a shipped
    document is named as such)."""
    registry_file = user_registry_path(state_dir)
    entries = _entries(registry_file)
    kept = [e for e in entries if e.get("key") != key]
    if len(kept) == len(entries):
        if key in load_registry():
            raise AddError(f"{key!r} is a shipped document, not one added with "
                           "`documents add`; it cannot be removed here")  # fmt: skip
        raise AddError(f"no document {key!r} in the user registry {registry_file}")
    removed = next(e for e in entries if e.get("key") == key)
    _write_entries(registry_file, kept)
    return DocumentSpec.model_validate(removed)


def user_keys(state_dir: Path | None = None) -> set[str]:
    path = user_registry_path(state_dir)
    return {spec.key for spec in parse_registry_file(path)} if path.is_file() else set()


def _entries(path: Path) -> list[dict[str, Any]]:
    return list(read_entries(path)) if path.is_file() else []


def _write_entries(path: Path, entries: list[dict[str, Any]]) -> None:
    header = ("# Documents added with `civicsetu documents add` (same schema as the shipped "
              "data/documents.yaml).\n")  # fmt: skip
    body = yaml.safe_dump({"schema_version": SCHEMA_VERSION, "documents": entries},
                          sort_keys=False, allow_unicode=True)  # fmt: skip
    write_atomic(path, (header + body).encode("utf-8"))


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(exc)
