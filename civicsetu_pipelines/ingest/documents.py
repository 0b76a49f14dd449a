"""Per-document ingestion steps as plain functions returning table rows (no Dagster).

Every step isolates failures per document: a document that cannot be fetched or parsed yields
a row with its ``error`` and the others go on.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.ingest.fetch import FetchError, fetch_document, save_verified
from civicsetu_pipelines.ingest.legal_structure import build_chunks
from civicsetu_pipelines.ingest.ocr import reading_ahead, tesseract_identity
from civicsetu_pipelines.ingest.pages import PdfError, open_pdf, pages_without_text, parse_pdf
from civicsetu_pipelines.ingest.registry import DocumentSpec, PageRangeError

PAGE_JSON_COLUMNS = ("rows", "margin_notes", "removed", "flags")
PARSE_LEDGER = "parses.jsonl"  # in a parse cache: one line per parse actually made


def fetch_rows(
    specs: Sequence[DocumentSpec],
    *,
    mirror_dirs: Sequence[Path],
    cache_dir: Path,
    offline: bool,
) -> list[dict[str, Any]]:
    """Fetch every document; one row each with ``status`` ok|failed and the ``error``."""
    rows = []
    for spec in specs:
        row: dict[str, Any] = {
            "document_key": spec.key,
            "jurisdiction": str(spec.jurisdiction),
            "path": None,
            "sha256": None,
            "bytes": None,
            "source": None,
            "status": "ok",
            "error": None,
        }
        try:
            result = fetch_document(
                spec, mirror_dirs=mirror_dirs, cache_dir=cache_dir, offline=offline
            )
        except FetchError as exc:
            row.update(status="failed", error=str(exc))
        else:
            row.update(
                path=str(result.path),
                sha256=result.sha256,
                bytes=result.bytes,
                source=result.source,
            )
        rows.append(row)
    save_verified()  # the stored copies checked: not read again until they change
    return rows


def parse_rows(spec: DocumentSpec, path: Path, *, ocr: bool = True) -> list[dict[str, Any]]:
    """Parse one document's pages to rows; raises :class:`PdfError` naming the document."""
    count, pages = _pages_to_ingest(spec, path)
    parsed = parse_pdf(spec.key, path, pages=pages, language=spec.language, ocr=ocr)
    return _page_rows(spec, count, [dataclasses.asdict(page) for page in parsed])


def _pages_to_ingest(spec: DocumentSpec, path: Path) -> tuple[int, list[int]]:
    """The PDF's page count and the 0-based pages of it the registry entry ingests."""
    doc = open_pdf(spec.key, path)
    count = doc.page_count
    doc.close()
    try:
        return count, spec.pages_to_ingest(count)
    except PageRangeError as exc:
        raise PdfError(spec.key, str(exc)) from exc


def _page_rows(
    spec: DocumentSpec, count: int, parsed: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Parsed pages (``ParsedPage`` as dicts) as the ``parsed_pages`` rows of ``spec``."""
    out = []
    for page in parsed:
        record = dict(page)
        for column in PAGE_JSON_COLUMNS:
            record[column] = json.dumps(record[column], ensure_ascii=False)
        record.update(
            document_key=spec.key,
            jurisdiction=str(spec.jurisdiction),
            pdf_page_count=count,
            error=None,
        )
        out.append(record)
    return out


def _source_hash(*modules: str) -> str:
    """sha256 of the source files of the named modules: a code change invalidates caches."""
    import importlib

    digest = hashlib.sha256()
    for name in modules:
        module = importlib.import_module(name)
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()


def pages_fingerprint(sha256: str, pages: Sequence[int], language: str, ocr: bool) -> str:
    """What a parse of a PDF's ``pages`` depends on: its bytes, the pages, the language, the
    parser and, when it may OCR, the Tesseract and language data that would read scanned pages.
    Nothing of the registry entry: the same file parsed by ``inspect`` and by a run is one."""
    payload = {
        "sha256": sha256,
        "pages": list(pages),
        "language": language,
        "ocr": ocr,
        "tesseract": tesseract_identity() if ocr else "",
        # a huge page is OCR'd at the resolution this many pixels allow
        "ocr_max_pixels": Settings.from_env().ocr_max_pixels if ocr else 0,
        "parser": _source_hash(
            "civicsetu_pipelines.ingest.pages",
            "civicsetu_pipelines.ingest.glyphs",
            "civicsetu_pipelines.ingest.margin_numbers",
            "civicsetu_pipelines.ingest.ocr",
            "civicsetu_pipelines.ingest.ocr_layers",
            "civicsetu_pipelines.base.canonical",
        ),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def parse_fingerprint(spec: DocumentSpec, sha256: str, ocr: bool, page_count: int) -> str:
    """:func:`pages_fingerprint` of the pages ``spec`` ingests from a PDF of ``page_count``."""
    return pages_fingerprint(sha256, spec.pages_to_ingest(page_count), spec.language, ocr)


def parse_rows_cached(
    spec: DocumentSpec,
    path: Path,
    sha256: str,
    cache_dir: Path,
    *,
    ocr: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[dict[str, Any]], bool]:
    """:func:`parse_rows`, reused from ``cache_dir`` when nothing it depends on changed.

    Returns the rows and whether they came from the cache (see :func:`parse_pages_cached`).
    """
    count, pages = _pages_to_ingest(spec, path)
    parsed, reused = parse_pages_cached(
        spec.key,
        path,
        sha256,
        cache_dir,
        pages=pages,
        language=spec.language,
        ocr=ocr,
        progress=progress,
    )
    return _page_rows(spec, count, parsed), reused


def parse_pages_cached(
    key: str,
    path: Path,
    sha256: str,
    cache_dir: Path,
    *,
    pages: Sequence[int],
    language: str,
    ocr: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[dict[str, Any]], bool]:
    """The PDF's ``pages`` parsed (``ParsedPage`` as dicts), reused from ``cache_dir`` when
    nothing they depend on changed (:func:`pages_fingerprint`); ``key`` names the document in
    errors and in the ledger.

    Returns the pages and whether they came from the cache. Parses with pages left needing OCR
    are not cached, so installing Tesseract later takes effect. Every parse actually made is
    recorded in the cache's ledger (:data:`PARSE_LEDGER`, one JSON line each: document,
    fingerprint, pages, OCR'd pages, seconds, pid, time), so a cache shared by several state
    directories or processes shows what was parsed, and OCR'd, more than once.
    """
    fingerprint = pages_fingerprint(sha256, pages, language, ocr)
    cache = cache_dir / f"{fingerprint}.json"
    if cache.is_file():
        return json.loads(cache.read_text()), True
    cache_dir.mkdir(parents=True, exist_ok=True)
    # One parse of a document at a time, across threads and processes: a run that reaches a
    # document the prefetch thread (or another run) is parsing waits for that parse and reads
    # it, instead of parsing (and OCR'ing) the same pages a second time beside it.
    with open(cache_dir / f".{fingerprint}.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cache.is_file():
            return json.loads(cache.read_text()), True
        began = time.monotonic()
        parsed = parse_pdf(
            key, path, pages=list(pages), language=language, ocr=ocr, progress=progress
        )
        out = [dataclasses.asdict(page) for page in parsed]
        # a page left for OCR (no Tesseract, or an OCR budget spent) is read again next time
        cached = not any({"needs_ocr", "ocr_skipped_budget"} & set(page.flags) for page in parsed)
        if cached:
            tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(out, ensure_ascii=False))
            os.replace(tmp, cache)
        record = {
            "document": key,
            "fingerprint": fingerprint,
            "pages": len(parsed),
            "ocr_pages": sum("ocr" in page.flags for page in parsed),
            "seconds": round(time.monotonic() - began, 3),
            "cached": cached,
            "pid": os.getpid(),
            "at": time.time(),
        }
        with open(cache_dir / PARSE_LEDGER, "a", encoding="utf-8") as ledger:
            ledger.write(json.dumps(record) + "\n")
    return out, False


def parse_ledger(cache_dir: Path, *, since: float = 0.0) -> list[dict[str, Any]]:
    """The parses recorded in ``cache_dir``'s ledger at or after ``since`` (a Unix time)."""
    path = cache_dir / PARSE_LEDGER
    if not path.is_file():
        return []
    records = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return [r for r in records if float(r["at"]) >= since]


def prefetch_parses(
    specs: Sequence[DocumentSpec],
    *,
    mirror_dirs: Sequence[Path],
    pdf_cache: Path,
    parse_cache: Path,
    offline: bool,
    ocr: bool = True,
) -> int:
    """Fetch and parse documents into the caches ahead of their runs; returns how many.

    Two lanes (:func:`split_scans`): the documents with pages to OCR, most pages first, in a
    thread of their own (their OCR is the longest wait of the runs ahead, and Tesseract does
    it in processes of its own), beside the others in the order given (the runs' order). One
    lane for all, the scans came last in the runs' order and the last partition waited on them;
    the scans first, the text documents of the next partitions waited behind them. Tesseract
    niced either way (:func:`~civicsetu_pipelines.ingest.ocr.reading_ahead`): the runs' own
    work first.

    Best effort: a document that fails here is left for its run, which reports the failure.
    """
    fetched = []
    for spec in specs:
        try:
            got = fetch_document(spec, mirror_dirs=mirror_dirs, cache_dir=pdf_cache,
                                 offline=offline)  # fmt: skip
        except Exception:  # noqa: BLE001 - the run itself reports what went wrong
            continue
        fetched.append((spec, got.path, got.sha256))
    scans, texts = split_scans(fetched) if ocr else ([], fetched)
    done = [0, 0]  # per lane

    def lane(index: int, documents: Sequence[tuple[DocumentSpec, Path, str]]) -> None:
        with reading_ahead():  # its OCR gives way to the runs' own work
            for spec, path, sha256 in documents:
                try:
                    parse_rows_cached(spec, path, sha256, parse_cache, ocr=ocr)
                    done[index] += 1
                except Exception:  # noqa: BLE001 - the run itself reports what went wrong
                    continue

    scanning = threading.Thread(target=lane, args=(0, scans), name="civicsetu-prefetch-ocr",
                                daemon=True)  # fmt: skip
    scanning.start()
    lane(1, texts)
    scanning.join()
    return sum(done)


def split_scans(
    fetched: Sequence[tuple[DocumentSpec, Path, str]],
) -> tuple[list[tuple[DocumentSpec, Path, str]], list[tuple[DocumentSpec, Path, str]]]:
    """``fetched`` (spec, path, sha256) as the documents with pages to OCR, most pages first
    (:func:`~civicsetu_pipelines.ingest.pages.pages_without_text`), and the others, in the
    order given."""
    counts = [pages_without_text(path) for _, path, _ in fetched]
    order = sorted((i for i in range(len(fetched)) if counts[i]), key=lambda i: -counts[i])
    return [fetched[i] for i in order], [f for f, n in zip(fetched, counts, strict=True) if not n]


def page_records(frame_rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Decode the JSON columns of stored page rows."""
    out = []
    for row in frame_rows:
        record = dict(row)
        for column in PAGE_JSON_COLUMNS:
            value = record.get(column)
            record[column] = json.loads(value) if isinstance(value, str) else (value or [])
        out.append(record)
    return out


def chunk_rows(
    spec: DocumentSpec, pages: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Chunk one document's parsed pages; returns chunk rows and a structure report row."""
    page_flags = {int(p["page"]): list(p["flags"]) for p in pages}
    chunks, report = build_chunks(
        pages,
        document_key=spec.key,
        jurisdiction=str(spec.jurisdiction),
        doc_type=str(spec.doc_type),
        page_flags=page_flags,
    )
    rows = []
    for chunk in chunks:
        row = chunk.as_row()
        row["flags"] = json.dumps(row["flags"])
        number = re.match(r"\d+", row["number"] or "")
        row["number_int"] = int(number.group(0)) if number else None
        rows.append(row)
    top = [c for c in chunks if c.level == 0]
    report_row = {
        **_report_head(spec, pages),
        "units": report.units,
        "sections": len(report.numbered),
        "numbers": json.dumps(report.numbered),
        "gaps": json.dumps(report.gaps),
        "duplicates": json.dumps(report.duplicates),
        "untitled": json.dumps(report.untitled),
        "chunks": len(chunks),
        "top_level_units": json.dumps(
            [
                {
                    "unit": c.unit,
                    "number": c.number,
                    "label": c.label,
                    "title": c.title,
                    "page_start": c.page_start,
                }
                for c in top
            ]
        ),
        "coverage": round(report.coverage, 6),
        "body_chars": report.body_chars,
        "supplementary_chunks": report.supplementary_chunks,
        "structure_ok": report.structure_ok,
        "checks": json.dumps([c.as_dict() for c in report.checks]),
        "error": None,
    }
    return rows, report_row


def _report_head(spec: DocumentSpec, pages: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "document_key": spec.key,
        "jurisdiction": str(spec.jurisdiction),
        "doc_type": str(spec.doc_type),
        "pages": len(pages),
        "ocr_pages": sum(1 for p in pages if "ocr" in p["flags"]),
        "needs_ocr_pages": sum(1 for p in pages if "needs_ocr" in p["flags"]),
    }


def failed_report(
    spec: DocumentSpec, pages: Sequence[dict[str, Any]], error: str
) -> dict[str, Any]:
    """The structure report row of a document whose structure could not be built (``error``
    says why): no units, no chunks, the same columns as :func:`chunk_rows`' report."""
    return {
        **_report_head(spec, pages),
        "units": 0,
        "sections": 0,
        "numbers": "[]",
        "gaps": "[]",
        "duplicates": "[]",
        "untitled": "[]",
        "chunks": 0,
        "top_level_units": "[]",
        "coverage": 0.0,
        "body_chars": 0,
        "supplementary_chunks": 0,
        "structure_ok": False,
        "checks": "[]",
        "error": error,
    }
