"""The document catalog in Postgres: per-document ingestion summary and top-level units.

Written per jurisdiction in one transaction (readers never see half a partition); read by the
``civicsetu stats`` and ``civicsetu sections`` commands. All SQL is parameterized.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import psycopg

from civicsetu_pipelines.base import SetAside, by_document
from civicsetu_pipelines.ingest import DocumentSpec

if TYPE_CHECKING:  # pandas only where frames are built: reading the catalog does not need it
    import pandas as pd

DOC_COLUMNS = (
    "key", "jurisdiction", "title", "doc_type", "status", "language", "effective_date",
    "source_url", "sha256", "bytes", "pages", "pages_ingested", "ocr_pages", "needs_ocr_pages",
    "sections", "chunks", "coverage", "ingest_status", "error",
)  # fmt: skip
UNIT_COLUMNS = ("document_key", "ordinal", "unit", "number", "label", "title", "page_start")


def _none(value: Any) -> Any:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def build_catalog_rows(
    specs: Sequence[DocumentSpec],
    raw_pdfs: pd.DataFrame,
    parsed_pages: pd.DataFrame,
    structure: pd.DataFrame,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One catalog row per registry document (failed ones included, with their error)."""
    raw = {r["document_key"]: r for r in raw_pdfs.to_dict("records")}
    reports = {r["document_key"]: r for r in structure.to_dict("records")}
    docs: list[dict[str, Any]] = []
    units: list[dict[str, Any]] = []
    for spec in specs:
        fetched = raw.get(spec.key, {})
        pages = (
            parsed_pages[parsed_pages["document_key"] == spec.key]
            if not parsed_pages.empty
            else parsed_pages
        )
        errors = pages["error"].dropna().tolist() if "error" in pages else []
        report = reports.get(spec.key)
        error = _none(fetched.get("error")) or (errors[0] if errors else None)
        if report is None and error is None:
            error = f"{spec.key}: no structure was produced"
        set_aside = json.loads(report.get("set_aside") or "[]") if report and not error else []
        if set_aside:
            error = set_aside_error(spec.key, set_aside)
        ok_pages = pages[pages["error"].isna()] if not pages.empty else pages
        docs.append(
            {
                "key": spec.key,
                "jurisdiction": str(spec.jurisdiction),
                "title": spec.title,
                "doc_type": str(spec.doc_type),
                "status": str(spec.status),
                "language": spec.language,
                "effective_date": spec.effective_date,
                "source_url": spec.source_url,
                "sha256": _none(fetched.get("sha256")),
                "bytes": _none(fetched.get("bytes")),
                "pages": int(ok_pages["pdf_page_count"].iloc[0]) if len(ok_pages) else None,
                "pages_ingested": len(ok_pages),
                "ocr_pages": report["ocr_pages"] if report else 0,
                "needs_ocr_pages": report["needs_ocr_pages"] if report else 0,
                "sections": report["sections"] if report else 0,
                "chunks": report["chunks"] if report else 0,
                "coverage": report["coverage"] if report else None,
                "ingest_status": "set_aside" if set_aside else "failed" if error else "ok",
                "error": error,
            }
        )
        if report:
            for ordinal, unit in enumerate(json.loads(report["top_level_units"])):
                units.append(
                    {
                        "document_key": spec.key,
                        "ordinal": ordinal,
                        "unit": unit.get("unit"),
                        "number": unit.get("number"),
                        "label": unit["label"],
                        "title": unit["title"],
                        "page_start": unit["page_start"],
                    }
                )
    return docs, units


def replace_jurisdiction(
    conn: psycopg.Connection[Any],
    jurisdiction: str,
    docs: Sequence[dict[str, Any]],
    units: Sequence[dict[str, Any]],
    *,
    registered: Sequence[str] | None = None,
) -> None:
    """Replace the catalog rows of one jurisdiction atomically: all of them, or, given the
    ``registered`` keys, the rows of ``docs`` and of documents no longer registered (the
    others, left as they were by an incremental run, stay)."""
    doc_sql = (
        f"INSERT INTO documents ({', '.join(DOC_COLUMNS)}, updated_at) "
        f"VALUES ({', '.join(['%s'] * len(DOC_COLUMNS))}, now())"
    )
    unit_sql = (
        f"INSERT INTO document_units ({', '.join(UNIT_COLUMNS)}) "
        f"VALUES ({', '.join(['%s'] * len(UNIT_COLUMNS))})"
    )
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"catalog:{jurisdiction}",))
        if registered is None:
            cur.execute("DELETE FROM documents WHERE jurisdiction = %s", (jurisdiction,))
        else:
            cur.execute(
                "DELETE FROM documents WHERE jurisdiction = %s "
                "AND (key = ANY(%s) OR NOT (key = ANY(%s)))",
                (jurisdiction, [d["key"] for d in docs], list(registered)),
            )
        cur.executemany(doc_sql, [tuple(d[c] for c in DOC_COLUMNS) for d in docs])
        cur.executemany(unit_sql, [tuple(u[c] for c in UNIT_COLUMNS) for u in units])


def forget_documents(
    conn: psycopg.Connection[Any],
    jurisdiction: str,
    *,
    keep: Sequence[str] = (),
    only: Sequence[str] | None = None,
) -> list[str]:
    """Take the catalog rows of ``jurisdiction``'s documents not in ``keep`` (of ``only``, when
    given) out, as :func:`replace_jurisdiction` leaves them out once they are not registered:
    the document, its units and what set it aside. Its stored pages stay (the pages of a
    version are kept for the answers "as of" a day it was in force). Returns the keys taken
    out."""
    only_keys = None if only is None else list(only)
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"catalog:{jurisdiction}",))
        cur.execute(
            "DELETE FROM document_set_asides WHERE jurisdiction = %s "
            "AND NOT (document_key = ANY(%s)) AND (%s::text[] IS NULL OR document_key = ANY(%s))",
            (jurisdiction, list(keep), only_keys, only_keys),
        )
        cur.execute(
            "DELETE FROM documents WHERE jurisdiction = %s AND NOT (key = ANY(%s)) "
            "AND (%s::text[] IS NULL OR key = ANY(%s)) RETURNING key",
            (jurisdiction, list(keep), only_keys, only_keys),
        )
        return sorted(str(row[0]) for row in cur.fetchall())


def store_pages(
    conn: psycopg.Connection[Any],
    docs: Sequence[dict[str, Any]],
    parsed_pages: pd.DataFrame,
) -> int:
    """Keep the body text of each successfully ingested page under (document, sha256, page).

    Rows of a version already stored are left as they are (a version's pages never change), so
    pages of superseded versions stay readable for answers "as of" a past date.
    """
    sha = {d["key"]: d["sha256"] for d in docs if d["ingest_status"] == "ok" and d["sha256"]}
    if parsed_pages.empty or not sha:
        return 0
    frame = parsed_pages[parsed_pages["document_key"].isin(list(sha))]
    rows = [
        (str(key), sha[str(key)], int(page), str(text))
        for key, page, text in zip(frame["document_key"], frame["page"], frame["text"], strict=True)
        if isinstance(text, str)
    ]
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO document_pages (document_key, sha256, page, text) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (document_key, sha256, page) DO NOTHING",
            rows,
        )
    return len(rows)


def record_set_asides(
    conn: psycopg.Connection[Any], jurisdiction: str, stage: str, items: Sequence[SetAside]
) -> None:
    """Replace the documents ``stage`` set aside in ``jurisdiction`` (``document_set_asides``:
    the steps after the catalog, whose set-asides the catalog cannot know), in one
    transaction."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(
            "DELETE FROM document_set_asides WHERE jurisdiction = %s AND stage = %s",
            (jurisdiction, stage),
        )
        cur.executemany(
            "INSERT INTO document_set_asides (jurisdiction, stage, document_key, error_type, "
            "message, page, location) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT "
            "(jurisdiction, stage, document_key) DO UPDATE SET message = document_set_asides"
            ".message || '; ' || EXCLUDED.message",
            [
                (jurisdiction, stage, a.document_key, a.error_type, a.message, a.page, a.where)
                for a in items
            ],  # fmt: skip
        )


def read_stats(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Per-document ingestion summary, ordered by jurisdiction and key. A document a later
    step (embedding, graph, provisions) set aside reads ``set_aside``, with why."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT key, jurisdiction, doc_type, status, pages, pages_ingested, ocr_pages, "
            "needs_ocr_pages, sections, chunks, coverage, ingest_status, error, updated_at "
            "FROM documents ORDER BY jurisdiction, key"
        )
        names = [d.name for d in cur.description or []]
        rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        cur.execute(
            "SELECT document_key, stage, error_type, message, page FROM document_set_asides "
            "ORDER BY document_key, stage"
        )
        later = by_document(SetAside(*row) for row in cur.fetchall())
    for row in rows:
        if row["key"] in later and row["ingest_status"] == "ok":
            row["ingest_status"] = "set_aside"
            row["error"] = set_aside_error(row["key"], later[row["key"]])
    return rows


def set_aside_error(key: str, reasons: Sequence[str]) -> str:
    """A set-aside document's error in the catalog: its previous rows stay served, and why."""
    return f"{key}: set aside, its previous rows stay served: " + "; ".join(reasons)


def read_sections(conn: psycopg.Connection[Any], document_key: str) -> list[dict[str, Any]]:
    """Top-level units of one document in order; raises KeyError for an unknown document."""
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM documents WHERE key = %s", (document_key,))
        if cur.fetchone() is None:
            raise KeyError(document_key)
        cur.execute(
            "SELECT label, title, page_start, unit, number FROM document_units "
            "WHERE document_key = %s ORDER BY ordinal",
            (document_key,),
        )
        names = [d.name for d in cur.description or []]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
