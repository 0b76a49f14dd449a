"""Reading the law of a day: a document's units in force on a date, and every version of one
unit with its dates and source. Pure domain code over psycopg (no Dagster); the rows are
``legal_chunks`` (sql/0002_store.sql, sql/0013_points_in_time.sql), dated by the load
(:mod:`civicsetu_pipelines.store.legal_chunks`) and by amending instruments
(:mod:`civicsetu_pipelines.ingest.amendments`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg
from psycopg.rows import dict_row

from civicsetu_pipelines.store.legal_chunks import in_force_clause


def units_in_force(
    conn: psycopg.Connection[Any], document_key: str, as_of: dt.date | None = None
) -> list[dict[str, Any]]:
    """The top-level units of a document in force on ``as_of`` (today's when None), in order:
    label, title, first page, and the amendment that made the text (None for the original)."""
    where, params = in_force_clause(as_of)
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "SELECT DISTINCT ON (section_label) section_label AS label, title, page_start, "
            "valid_from, valid_to, amendment, ordinal FROM legal_chunks "
            f"WHERE document_key = %s AND {where} "
            "ORDER BY section_label, level, ordinal",
            (document_key, *params),
        )
        rows = cur.fetchall()
        # a unit an amendment made in one of its chunks: say so for the unit
        cur.execute(
            "SELECT DISTINCT section_label, amendment FROM legal_chunks "
            f"WHERE document_key = %s AND {where} AND amendment IS NOT NULL",
            (document_key, *params),
        )
        amended = {str(r["section_label"]): r["amendment"] for r in cur.fetchall()}
    for row in rows:
        row["amendment"] = row["amendment"] or amended.get(str(row["label"]))
    return sorted(rows, key=lambda r: int(r.pop("ordinal")))


def unit_history(
    conn: psycopg.Connection[Any], document_key: str, label: str
) -> list[dict[str, Any]]:
    """Every version of the unit ``label`` ("Rule 18(2)") of a document, oldest first: its
    chunk label, dates, status, text and source (the document version, or the amending
    instrument with the instruction's words). A label no chunk carries is read as the chunks of
    its top-level unit ("Rule 18(2)" printed inside "Rule 18": the stored ``section_label`` the
    label starts with)."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "SELECT c.label, c.chunk_id::text AS chunk_id, c.valid_from, c.valid_to, c.status, "
            "c.text, c.page_start, c.amendment, v.sha256 FROM legal_chunks c "
            "JOIN document_versions v ON v.version_id = c.version_id "
            "WHERE c.document_key = %(doc)s AND (c.label = %(label)s OR (NOT EXISTS (SELECT 1 "
            "FROM legal_chunks x WHERE x.document_key = %(doc)s AND x.label = %(label)s) AND "
            "(c.section_label = %(label)s OR starts_with(%(label)s, c.section_label || '(')))) "
            "ORDER BY c.valid_from, c.ordinal, c.row_id",
            {"doc": document_key, "label": label},
        )
        return cur.fetchall()
