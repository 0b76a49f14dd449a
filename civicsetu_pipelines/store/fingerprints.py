"""What each jurisdiction serves now, as one fingerprint per jurisdiction.

:func:`~civicsetu_pipelines.store.served_fingerprint` fingerprints the whole store (an
evaluation's identity); :func:`served_fingerprints` splits the same hash by jurisdiction, so a
question that reads two jurisdictions can tell whether either changed
(:class:`~civicsetu_pipelines.evaluate.memo.ScopedMemo`).
"""

from __future__ import annotations

from typing import Any

import psycopg


def served_fingerprints(conn: psycopg.Connection[Any]) -> dict[str, str]:
    """Jurisdiction -> sha256 over its current rows (document, version, unit id, content
    sha256, in a fixed order); a jurisdiction that serves nothing is absent."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT jurisdiction, encode(sha256(convert_to(string_agg(document_key || ':' || "
            "version_id::text || ':' || chunk_id::text || ':' || content_sha256, ',' "
            "ORDER BY document_key, version_id, chunk_id), 'UTF8')), 'hex') "
            "FROM legal_chunks WHERE status = %s GROUP BY jurisdiction",
            ("current",),
        )
        return {str(j): str(h) for j, h in cur.fetchall()}
