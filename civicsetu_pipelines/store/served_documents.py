"""The documents each jurisdiction serves, with the fingerprint that served them (issue 46):
the ledger a run reads to process only the documents that changed
(:mod:`civicsetu_pipelines.ingest.worklist`). Table ``served_documents`` (sql/0018)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from civicsetu_pipelines.ingest import ServedDocument


def read_served(conn: psycopg.Connection[Any], jurisdiction: str) -> dict[str, ServedDocument]:
    """Document key -> what it was served with, for one jurisdiction."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT document_key, fingerprint, targets FROM served_documents "
            "WHERE jurisdiction = %s",
            (jurisdiction,),
        )
        return {str(k): ServedDocument(str(f), tuple(t or ())) for k, f, t in cur.fetchall()}


def served_fingerprint_of(conn: psycopg.Connection[Any], document_key: str) -> str | None:
    """The fingerprint one document (the Act) is served with, in any jurisdiction."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT fingerprint FROM served_documents WHERE document_key = %s "
            "ORDER BY served_at DESC LIMIT 1",
            (document_key,),
        )
        row = cur.fetchone()
    return None if row is None else str(row[0])


def record_served(
    conn: psycopg.Connection[Any],
    jurisdiction: str,
    *,
    served: Mapping[str, ServedDocument],
    unserved: Sequence[str],
    registered: Sequence[str],
    run_id: str,
) -> None:
    """After a run: ``served`` documents recorded with their fingerprints, ``unserved`` ones
    (failed or set aside in this run) and those no longer ``registered`` forgotten, so the next
    run takes them again; every other row stays. One transaction."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"served:{jurisdiction}",))
        cur.execute(
            "DELETE FROM served_documents WHERE jurisdiction = %s "
            "AND (document_key = ANY(%s) OR NOT (document_key = ANY(%s)))",
            (jurisdiction, list(unserved), list(registered)),
        )
        cur.executemany(
            "INSERT INTO served_documents (jurisdiction, document_key, fingerprint, targets, "
            "run_id) VALUES (%s, %s, %s, %s, %s) ON CONFLICT (jurisdiction, document_key) DO "
            "UPDATE SET fingerprint = EXCLUDED.fingerprint, targets = EXCLUDED.targets, "
            "run_id = EXCLUDED.run_id, served_at = now()",
            [
                (jurisdiction, key, doc.fingerprint, list(doc.targets), run_id)
                for key, doc in served.items()
            ],  # fmt: skip
        )


def set_aside_keys(conn: psycopg.Connection[Any], jurisdiction: str) -> set[str]:
    """The documents of ``jurisdiction`` a step after the catalog set aside in its last run."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT DISTINCT document_key FROM document_set_asides WHERE jurisdiction = %s",
            (jurisdiction,),
        )
        return {str(row[0]) for row in cur.fetchall()}


def forget_served(
    cur: psycopg.Cursor[Any],
    jurisdiction: str,
    *,
    keep: Sequence[str],
    only: Sequence[str] | None = None,
) -> None:
    """In the caller's transaction: forget the fingerprints of ``jurisdiction``'s documents not
    in ``keep`` (of ``only``, when given), whose rows are being retired outside a run, so that
    the same document registered again is processed again, not left as it was."""
    only_keys = None if only is None else list(only)
    cur.execute(
        "DELETE FROM served_documents WHERE jurisdiction = %s AND NOT (document_key = ANY(%s)) "
        "AND (%s::text[] IS NULL OR document_key = ANY(%s))",
        (jurisdiction, list(keep), only_keys, only_keys),
    )
