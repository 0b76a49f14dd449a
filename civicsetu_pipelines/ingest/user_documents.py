"""Documents a user registers: ``civicsetu documents add | list | remove``.

Pure domain code (no Dagster). ``add`` checks a PDF (a PDF, not encrypted, not empty, its page
range inside it), reads its kind, title, date and what it amends or repeals from its own words
(:mod:`~civicsetu_pipelines.ingest.detection`, on the pages parsed as a run parses them, through
the parse cache: the run that follows reuses them) unless the user gave them, copies it into the
content-addressed PDF store (``storage/pdfs/<sha256>.pdf``) and appends it, pinned by sha256, to
the user registry ``<state>/registry/documents.yaml``, which
:func:`~civicsetu_pipelines.ingest.registry.load_registry` reads beside the shipped one.
Nothing is written unless every check passes, and nothing at all with ``dry_run``. ``remove``
takes a user document out of the user registry (a shipped one cannot be removed); ``civicsetu
documents remove`` then retires its rows at once when the database can be reached
(:mod:`civicsetu_pipelines.operate.retirement`), else the next run of its jurisdiction does, like
any registry change.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from civicsetu_pipelines.base import (
    Settings,
    UnknownJurisdictionError,
    jurisdiction_code,
    load_jurisdictions,
    parse_cache_dir,
    pdf_cache_dir,
    sha256_file,
    write_atomic,
)
from civicsetu_pipelines.ingest.amendments import amendable_titles
from civicsetu_pipelines.ingest.detection import (
    LOW,
    Detection,
    Found,
    detect_document,
    detect_jurisdiction,
)
from civicsetu_pipelines.ingest.documents import parse_pages_cached
from civicsetu_pipelines.ingest.kinds import kind_names
from civicsetu_pipelines.ingest.ocr import tesseract_available
from civicsetu_pipelines.ingest.pages import PdfError, open_pdf
from civicsetu_pipelines.ingest.registry import (
    DocumentSpec,
    Registry,
    load_registry,
    page_spans,
    parse_registry_file,
    read_entries,
    user_registry_path,
    write_registry_file,
)

_KEY_WORDS = re.compile(r"[a-z0-9]+")


class AddError(ValueError):
    """A document that cannot be added; the message is one line naming the file and why, and
    ``detection`` what had been read from the document by then (None before it was read)."""

    def __init__(self, message: str, detection: Detection | None = None) -> None:
        super().__init__(message)
        self.detection = detection


@dataclass(frozen=True)
class Added:
    """What ``add`` registered, and what the user should know about it."""

    spec: DocumentSpec
    pages: int
    text_layer: bool
    new_jurisdiction: bool
    stored: Path
    notes: tuple[str, ...]
    detection: Detection | None = None  # what the document's own words gave
    given: tuple[str, ...] = ()  # the fields the user gave (kind, title, date, amends, repeals)
    written: bool = True  # False for a dry run: nothing was stored or registered


# What each field read from a document is given with instead, when it cannot be read
FLAGS = {"jurisdiction": "-j J", "kind": "--kind K", "title": "--title TITLE",
         "date": "--effective-from YYYY-MM-DD", "in_force": "--effective-from YYYY-MM-DD",
         "amends": "--amends KEY", "repeals": "--repeals KEY"}  # fmt: skip


def issuer_names() -> dict[str, list[str]]:
    """Each state's and territory's code and the names its gazettes print it under (its name
    and the aliases spelled as words: not "UP" or "IN-CT"), for :func:`detect_jurisdiction`;
    the Union is read from its own markers."""
    return {j.code: [n for n in (j.name, *j.aliases) if re.search(r"[a-z]", n)]
            for j in load_jurisdictions().items if j.kind != "union"}  # fmt: skip


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
    pipeline could not read (the same checks as parsing: :func:`open_pdf`), one line naming the
    file and the problem: not a PDF (an image renamed .pdf: which), encrypted with a password
    (an empty user password opens), zero pages, damaged beyond a faithful reading. A page
    whose text cannot be read (a damaged content stream) counts as one without a text layer:
    its document is not refused for it."""
    if not path.is_file():
        raise AddError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    try:
        doc = open_pdf(path.name, path)
    except PdfError as exc:
        raise AddError(f"{path}: {' '.join(exc.reason.split())}") from None
    try:
        texts = [_has_text(doc[i]) for i in range(doc.page_count)]
    finally:
        doc.close()
    return len(texts), texts


def _has_text(page: Any) -> bool:
    try:
        return bool(page.get_text().strip())
    except Exception:  # noqa: BLE001 - MuPDF cannot read this page's text: parsing says so
        return False


def add_document(
    path: Path,
    *,
    jurisdiction: str | None,
    kind: str | None = None,
    title: str | None = None,
    key: str | None = None,
    effective_from: dt.date | None = None,
    first_of_month: bool = False,
    status: str = "in_force",
    pages: str | None = None,
    language: str = "eng",
    source_url: str | None = None,
    amends: Sequence[str] = (),
    repeals: Sequence[str] = (),
    state_dir: Path | None = None,
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Added:
    """Check ``path``, store it and register it in the user registry; nothing is written when
    a check fails (:class:`AddError`, one line), nor with ``dry_run``.

    ``kind``, ``title``, ``effective_from``, ``amends`` and ``repeals`` override what the
    document's own words give (:func:`~civicsetu_pipelines.ingest.detection.detect_document`):
    the date it comes into force on, else its own date, is its effective date. A field that is
    neither given nor read is an :class:`AddError` naming the flag to pass; a date printed to
    the month only (its day left blank) is taken as the month's first day with
    ``first_of_month``, never without. ``progress`` hears
    of long work before it starts (the scanned pages about to be OCR'd)."""
    path = Path(path).resolve()
    try:
        code = jurisdiction_code(jurisdiction) if jurisdiction is not None else None
    except UnknownJurisdictionError as exc:
        raise AddError(str(exc)) from None
    if kind is not None and kind not in kind_names():
        raise AddError(f"unknown kind {kind!r}; known: {', '.join(kind_names())}")
    page_count, text_pages = _check_pdf(path)
    ranges = page_ranges_of(pages, page_count) if pages else None
    chosen = [i for first, last in ranges for i in range(first - 1, last)] if ranges else None
    text_layer = any(text_pages[i] for i in (chosen or range(page_count)))
    sha = sha256_file(path)
    registry = load_registry()
    pinned = {spec.sha256: spec.key for spec in registry.documents() if spec.sha256}
    refused = (f"key {key!r} is already registered; choose another with --key"
               if key is not None and key in registry else
               f"{path}: this file (sha256 {sha[:12]}…) is already registered as {pinned[sha]!r}"
               if sha in pinned else None)  # fmt: skip
    if refused and not dry_run:  # refused before the document is read; a dry run reads it first
        raise AddError(refused)
    scanned = sum(not text_pages[i] for i in (chosen or range(page_count)))
    if scanned and progress is not None:
        progress(f"{path.name}: OCR'ing {scanned} page(s) without a text layer, as a run would "
                 "(seconds a page; the run reuses them) ...")  # fmt: skip
    read = _read_pages(path, sha, chosen or list(range(page_count)), language, state_dir)
    issuer = None
    if code is None:  # a source that serves several: the issuer its own words name
        issuer = detect_jurisdiction(read, issuer_names())
        if not issuer.found:
            raise AddError(f"{path}: the jurisdiction could not be read from the document's "
                           f"own words ({issuer.words}): pass -j J")  # fmt: skip
        code = str(issuer.value)
    detection = detect_document(
        read,
        titles=amendable_titles(registry.documents(code)),
        fallback_titles={} if code == "CENTRAL" else amendable_titles(
            [s for s in registry.documents("CENTRAL") if s.doc_type == "act"]),
        kind=kind,
    )  # fmt: skip
    if issuer is not None:
        detection = dataclasses.replace(detection, jurisdiction=issuer)
    month = None if effective_from or detection.in_force.found else _first_of_month(detection)
    if month is not None and first_of_month:
        effective_from = month
    if refused:
        raise AddError(refused, detection)
    flagged = (("jurisdiction", jurisdiction), ("kind", kind), ("title", title),
               ("date", effective_from), ("amends", amends), ("repeals", repeals))  # fmt: skip
    given = tuple(name for name, value in flagged if value)
    missing = [f for f in (detection.kind, detection.title, detection.effective_from)
               if not f.found and f.name not in given]  # fmt: skip
    if missing:
        names = _and([f"the {f.name}" for f in missing])
        flags = _and([FLAGS[f.name] for f in missing])
        if month is not None:
            flags += f" (or --first-of-month: {detection.date.words})"
        raise AddError(f"{path}: {names} could not be read from the document's own words: pass "
                       f"{flags}", detection)  # fmt: skip
    kind = kind or str(detection.kind.value)
    title = title or str(detection.title.value)
    date = effective_from or _as_date(detection.effective_from)
    amends = tuple(amends) or _keys(detection.amends)
    repeals = tuple(repeals) or _keys(detection.repeals)
    key = key or key_from_title(title)
    if key in registry:
        raise AddError(f"key {key!r} is already registered; choose another with --key",
                       detection)  # fmt: skip
    entry: dict[str, Any] = {
        "key": key,
        "title": title,
        "jurisdiction": code,
        "doc_type": kind,
        "effective_date": date.isoformat(),
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
        raise AddError(f"{path}: {_first_error(exc)}", detection) from None
    notes = [f"{f.name} read with low confidence ({f.why()}): check it, or pass {FLAGS[f.name]}"
             for f in _used(detection, given) if f.confidence == LOW]  # fmt: skip
    if month is not None and first_of_month:
        notes.append(f"date taken as {month.isoformat()}, the first day of its month "
                     f"(--first-of-month): {detection.date.words}")  # fmt: skip
    if not text_layer:
        notes.append(f"no text layer: its pages will be OCR'd in {language!r} "
                     f"({_ocr_readiness(language)})")  # fmt: skip
    new_jurisdiction = code not in registry.jurisdictions()
    if new_jurisdiction:
        name = load_jurisdictions().by_code[code].name
        notes.append(f"{name} ({code}) is a new partition: its first run adds it to the Dagster "
                     "instance (no code reload)")  # fmt: skip
    try:
        Registry(specs=(*registry.specs, spec))  # the registry as a whole still validates
    except ValueError as exc:
        raise AddError(f"{path}: {_first_error(exc)}", detection) from None
    stored = pdf_cache_dir(state_dir or Settings.from_env().state_dir) / f"{sha}.pdf"
    added = Added(spec, page_count, text_layer, new_jurisdiction, stored, tuple(notes),
                  detection, given, written=not dry_run)  # fmt: skip
    if dry_run:
        return added
    registry_file = user_registry_path(state_dir)
    entries = [*_entries(registry_file), {k: v for k, v in entry.items() if v is not None}]
    if not stored.is_file():
        write_atomic(stored, path.read_bytes())
    _write_entries(registry_file, entries)
    return added


def _first_of_month(detection: Detection) -> dt.date | None:
    """The first day of the month a date printed to the month only names (its day left blank:
    ``detection.date`` not found, its value "YYYY-MM"); None otherwise."""
    value = detection.date.value
    if detection.date.found or not isinstance(value, str):
        return None
    year, month = value.split("-")
    return dt.date(int(year), int(month), 1)


def _read_pages(
    path: Path, sha: str, pages: list[int], language: str, state_dir: Path | None
) -> list[dict[str, Any]]:
    """The pages to ingest, parsed as a run parses them and through the same parse cache (the
    run that follows reuses them; a scanned page is OCR'd once)."""
    settings = Settings.from_env()
    cache = parse_cache_dir(state_dir or settings.state_dir, settings.parse_cache_override)
    try:
        parsed, _ = parse_pages_cached(path.stem, path, sha, cache, pages=pages,
                                       language=language)  # fmt: skip
    except PdfError as exc:
        raise AddError(f"{path}: {exc.reason}") from None
    return parsed


def _used(detection: Detection, given: Sequence[str]) -> list[Found]:
    """The fields read from the document that ``add`` uses (those the user did not give)."""
    fields = [detection.kind, detection.title, detection.effective_from, detection.amends,
              detection.repeals]  # fmt: skip
    return [f for f in fields if f.found and (f.name if f.name != "in_force" else "date")
            not in given]  # fmt: skip


def _and(words: Sequence[str]) -> str:
    return ", ".join(words[:-1]) + f" and {words[-1]}" if len(words) > 1 else words[0]


def _as_date(found: Found) -> dt.date:
    assert isinstance(found.value, dt.date), found
    return found.value


def _keys(found: Found) -> tuple[str, ...]:
    return tuple(found.value) if found.found and isinstance(found.value, tuple) else ()


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
    """Take ``key`` out of the user registry (:func:`remove_documents` of one key)."""
    (spec,) = remove_documents([key], state_dir=state_dir)
    return spec


def remove_documents(keys: Sequence[str], *, state_dir: Path | None = None) -> list[DocumentSpec]:
    """Take ``keys`` out of the user registry together, in their order. Nothing is written, and
    :class:`AddError` says why, when one is not there (a shipped document is named as such) or
    when a document left registered amends, repeals or dates the commencement of one of them:
    the registry would name a document it no longer holds, so it is removed with them (both
    keys in one call) or first."""
    registry_file = user_registry_path(state_dir)
    entries = _entries(registry_file)
    by_key = {e.get("key"): e for e in entries}
    for key in keys:
        if key not in by_key:
            if key in load_registry():
                raise AddError(f"{key!r} is a shipped document, not one added with "
                               "`documents add`; it cannot be removed here")  # fmt: skip
            raise AddError(f"no document {key!r} in the user registry {registry_file}")
    gone = list(dict.fromkeys(keys))
    kept = [e for e in entries if e.get("key") not in gone]
    for entry in kept:
        spec = DocumentSpec.model_validate(entry)
        relations = [("amends", spec.amends), ("repeals", spec.repeals),
                     ("dates the commencement of", [c.by for c in spec.commencement])]  # fmt: skip
        for relation, named in relations:
            for key in (k for k in gone if k in named):
                raise AddError(f"{spec.key!r} {relation} {key!r} and stays registered: remove "
                               f"them together (`civicsetu documents remove {key} {spec.key}`) "
                               f"or {spec.key!r} first; nothing removed")  # fmt: skip
    _write_entries(registry_file, kept)
    return [DocumentSpec.model_validate(by_key[key]) for key in gone]


def user_keys(state_dir: Path | None = None) -> set[str]:
    path = user_registry_path(state_dir)
    return {spec.key for spec in parse_registry_file(path)} if path.is_file() else set()


def _entries(path: Path) -> list[dict[str, Any]]:
    return list(read_entries(path)) if path.is_file() else []


def _write_entries(path: Path, entries: list[dict[str, Any]]) -> None:
    header = ("# Documents added with `civicsetu documents add` (same schema as the shipped "
              "data/documents.yaml).\n")  # fmt: skip
    write_registry_file(path, header, entries)


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(exc)
