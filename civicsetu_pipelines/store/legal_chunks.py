"""The pgvector serving store: versioned legal chunks, loaded one partition per transaction.

Pure domain code over psycopg (no Dagster). Schema in ``sql/0002_store.sql``. Every statement is
parameterized; the only composed SQL is the vector dimension (an integer) in
:func:`ensure_model`.

Loading a jurisdiction (:func:`load_partition`) runs in ONE transaction under a per-jurisdiction
advisory lock: readers see the old rows until it commits, a crash mid-load rolls everything
back, and two loads of one jurisdiction run one after the other. Within it:

* a document whose sha256 changed gets a new version; the old version and its chunks become
  ``superseded`` with ``valid_to`` = the new ``valid_from`` (the registry's effective date when
  it is later than the old version's, else the ingestion date);
* chunk rows are upserted: new rows inserted, changed rows updated, unchanged rows untouched;
  rows that vanished from a version are superseded; a row in force later than its document (a
  unit a commencement notification brought into force, ``in_force_from``) is valid from then;
* a unit an amending or repealing instrument ended (``in_force_to``) is superseded from that
  day, and the point in time an amendment made (``amendment``, its evidence) is current from
  its ``in_force_from`` (``scheduled`` until then);
* documents no longer in the registry are retired the same way (never left current; their
  scheduled rows never start): :func:`retire_documents` does the same outside a load (``civicsetu
  documents remove``);
* documents that failed this run are not touched: their previous data stays served;
* what changed in the jurisdiction's current units (added, changed with the amending
  instrument if any, ended) is recorded in ``store_changes`` (:mod:`.changes`), in the same
  transaction: a failed load records nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from civicsetu_pipelines.ingest import assign_eids
from civicsetu_pipelines.store.changes import Change, record_unit_changes, snapshot
from civicsetu_pipelines.store.database import StoreNotReady
from civicsetu_pipelines.store.partial_indexes import (
    PARTIAL_MAX_ARMS,
    Scope,
    arms_of,
    partial_parameters,
    partial_statement,
    partial_usable,
    read_scope,
    sync_partial_index,
)
from civicsetu_pipelines.store.served_documents import forget_served

HNSW_INDEX = "legal_chunks_embedding_hnsw"

CHUNK_FIELDS = (
    "chunk_id", "document_key", "jurisdiction", "doc_type", "unit", "number", "legal_path",
    "label", "section_label", "title", "chapter", "text", "page_start", "page_end",
    "char_start", "char_end", "parent_id", "ordinal", "level", "flags",
)  # fmt: skip
STAGE_FIELDS = (
    *CHUNK_FIELDS, "row_sha256", "content_sha256", "model_id", "embedding", "embedding_windows",
    "in_force_from",  # a unit in force later than its document (a commencement notification)
    "in_force_to",  # a unit an amending or repealing instrument ended, from that day
    "amendment",  # a point in time an amending instrument made: its evidence (JSON)
    "eid",  # the unit's Akoma Ntoso eId (ingest.akn.assign_eids, at load)
)  # fmt: skip


class StoreError(RuntimeError):
    pass


@dataclass(frozen=True)
class DocumentVersionInput:
    """A document ingested in this run: its content hash and registry effective date."""

    document_key: str
    sha256: str
    effective_date: dt.date


@dataclass
class LoadStats:
    jurisdiction: str
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    superseded: int = 0
    new_versions: list[str] = field(default_factory=list)
    retired_documents: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)  # recorded in store_changes


def is_chunk_id(value: Any) -> bool:
    """Whether ``value`` is a chunk id (a UUID, as ``legal_chunks.chunk_id`` holds them), so
    that it may be cast to ``uuid`` in a query: graph edges also name documents and
    enactments."""
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def _run_id() -> str:
    """The run id of a load or retirement made outside a Dagster run."""
    return f"local-{uuid.uuid4().hex}"


def row_sha256(chunk: dict[str, Any]) -> str:
    """Hash of every stored field of a chunk but the vector: detects any change to a row."""
    payload = {name: chunk.get(name) for name in CHUNK_FIELDS}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def prepare(conn: psycopg.Connection[Any]) -> None:
    """Register the pgvector type adapters on a connection."""
    register_vector(conn)


def ensure_serving(conn: psycopg.Connection[Any]) -> int:
    """The number of current units of the serving table; :class:`StoreNotReady`, saying what
    to run, when the database was never migrated or nothing was materialized into it."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT to_regclass('legal_chunks') IS NOT NULL "
            "AND EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')"
        )
        row = cur.fetchone()
        if not (row and row[0]):
            raise StoreNotReady(
                "the database has no serving table yet: run `civicsetu materialize` first"
            )
        cur.execute("SELECT count(*) FROM legal_chunks WHERE status = 'current'")
        count = cur.fetchone()
    current = int(count[0]) if count else 0
    if current == 0:
        raise StoreNotReady(
            "nothing is materialized yet (no current units in the serving table): run "
            "`civicsetu materialize` first"
        )
    return current


# ---------------------------------------------------------------------------------------------
# Model and dimension


def store_setting(conn: psycopg.Connection[Any], key: str) -> str | None:
    with conn.cursor() as cur:
        cur.execute("SELECT value FROM store_settings WHERE key = %s", (key,))
        row = cur.fetchone()
    return None if row is None else str(row[0])


def _set_setting(cur: psycopg.Cursor[Any], key: str, value: str) -> None:
    cur.execute(
        "INSERT INTO store_settings (key, value) VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        (key, value),
    )


def column_dimension(conn: psycopg.Connection[Any]) -> int | None:
    """The declared dimension of ``legal_chunks.embedding``."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'legal_chunks'::regclass "
            "AND attname = 'embedding'"
        )
        row = cur.fetchone()
    return None if row is None or row[0] < 0 else int(row[0])


def ensure_model(conn: psycopg.Connection[Any], model_id: str, dimension: int) -> bool:
    """Make the table hold ``dimension``-d vectors of ``model_id``; True if anything changed.

    Switching models clears every stored vector (they are re-embedded on the next loads) and,
    when the dimension differs, changes the column type and rebuilds the HNSW index.
    """
    if not 1 <= int(dimension) <= 16000:
        raise StoreError(f"invalid embedding dimension {dimension}")
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("store:model",))
        current_model = store_setting(conn, "embedding_model")
        current_dim = column_dimension(conn)
        if current_model == model_id and current_dim == dimension:
            return False
        if current_dim != dimension:
            cur.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(HNSW_INDEX)))
            cur.execute(
                sql.SQL(
                    "ALTER TABLE legal_chunks ALTER COLUMN embedding TYPE vector({}) USING NULL"
                ).format(sql.Literal(int(dimension)))
            )
            cur.execute(
                sql.SQL(
                    "CREATE INDEX {} ON legal_chunks USING hnsw (embedding vector_cosine_ops) "
                    "WITH (m = 16, ef_construction = 64)"
                ).format(sql.Identifier(HNSW_INDEX))
            )
        if current_model is not None and current_model != model_id:
            # Every row is re-embedded by the next load of its jurisdiction (current rows from
            # chunk_embeddings, superseded rows by legal_chunks itself).
            cur.execute("UPDATE legal_chunks SET embedding = NULL, model_id = NULL")
        _set_setting(cur, "embedding_model", model_id)
        _set_setting(cur, "embedding_dimension", str(int(dimension)))
    return True


# ---------------------------------------------------------------------------------------------
# Embedding cache


def cache_lookup(
    conn: psycopg.Connection[Any], model_id: str, shas: Sequence[str]
) -> dict[str, tuple[np.ndarray, int]]:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT text_sha256, embedding, windows FROM embedding_cache "
            "WHERE model_id = %s AND text_sha256 = ANY(%s)",
            (model_id, list(shas)),
        )
        return {row[0]: (_as_array(row[1]), int(row[2])) for row in cur}


def _as_array(value: Any) -> np.ndarray:
    """A vector from Postgres (a dimensionless ``vector`` column reads as pgvector's Vector)."""
    array = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(array, dtype=np.float32)


def cache_store(
    conn: psycopg.Connection[Any],
    model_id: str,
    rows: Iterable[tuple[str, np.ndarray, int]],
) -> None:
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO embedding_cache (model_id, text_sha256, embedding, windows) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
            [(model_id, sha, np.asarray(vec, dtype=np.float32), n) for sha, vec, n in rows],
        )


# ---------------------------------------------------------------------------------------------
# Loading


_STAGE_DDL = """
CREATE TEMP TABLE stage_chunks (
    chunk_id uuid, document_key text, jurisdiction text, doc_type text, unit text,
    number text, legal_path text, label text, section_label text, title text, chapter text,
    text text, page_start integer, page_end integer, char_start integer, char_end integer,
    parent_id uuid, ordinal integer, level integer, flags jsonb, row_sha256 text,
    content_sha256 text, model_id text, embedding vector, embedding_windows integer,
    in_force_from date, in_force_to date, amendment jsonb, eid text
) ON COMMIT DROP
"""

_UPSERT = """
INSERT INTO legal_chunks (
    chunk_id, document_key, jurisdiction, doc_type, unit, number, legal_path, label,
    section_label, title, chapter, text, page_start, page_end, char_start, char_end, parent_id,
    ordinal, level, flags, row_sha256, content_sha256, model_id, embedding, embedding_windows,
    version_id, status, valid_from, valid_to, amendment, eid
)
SELECT chunk_id, document_key, jurisdiction, doc_type, unit, number, legal_path, label,
       section_label, title, chapter, text, page_start, page_end, char_start, char_end,
       parent_id, ordinal, level, flags, row_sha256, content_sha256, model_id, embedding,
       embedding_windows, %(version_id)s,
       CASE WHEN in_force_to <= %(today)s::date THEN 'superseded'
            WHEN amendment IS NOT NULL AND in_force_from > %(today)s::date THEN 'scheduled'
            ELSE 'current' END,
       GREATEST(%(valid_from)s::date, COALESCE(in_force_from, %(valid_from)s::date)),
       in_force_to, amendment, eid
FROM stage_chunks WHERE document_key = %(document_key)s
ON CONFLICT (chunk_id, version_id) DO UPDATE SET
    doc_type = EXCLUDED.doc_type, unit = EXCLUDED.unit, number = EXCLUDED.number,
    legal_path = EXCLUDED.legal_path, label = EXCLUDED.label,
    section_label = EXCLUDED.section_label, title = EXCLUDED.title,
    chapter = EXCLUDED.chapter, text = EXCLUDED.text, page_start = EXCLUDED.page_start,
    page_end = EXCLUDED.page_end, char_start = EXCLUDED.char_start,
    char_end = EXCLUDED.char_end, parent_id = EXCLUDED.parent_id,
    ordinal = EXCLUDED.ordinal, level = EXCLUDED.level, flags = EXCLUDED.flags,
    row_sha256 = EXCLUDED.row_sha256, content_sha256 = EXCLUDED.content_sha256,
    model_id = EXCLUDED.model_id, embedding = EXCLUDED.embedding,
    embedding_windows = EXCLUDED.embedding_windows, status = EXCLUDED.status,
    valid_to = EXCLUDED.valid_to, valid_from = EXCLUDED.valid_from,
    amendment = EXCLUDED.amendment, eid = EXCLUDED.eid, updated_at = now()
WHERE (legal_chunks.row_sha256, legal_chunks.model_id, legal_chunks.status,
       legal_chunks.valid_from, legal_chunks.valid_to, legal_chunks.amendment, legal_chunks.eid)
      IS DISTINCT FROM (EXCLUDED.row_sha256, EXCLUDED.model_id, EXCLUDED.status,
                        EXCLUDED.valid_from, EXCLUDED.valid_to, EXCLUDED.amendment, EXCLUDED.eid)
RETURNING (xmax = 0) AS inserted
"""


def _stage(cur: psycopg.Cursor[Any], chunks: Sequence[dict[str, Any]]) -> None:
    cur.execute(_STAGE_DDL)
    with cur.copy(
        "COPY stage_chunks ({}) FROM STDIN".format(", ".join(STAGE_FIELDS))  # noqa: UP032
    ) as copy:
        for chunk in chunks:
            values = []
            for name in STAGE_FIELDS:
                value = chunk.get(name)
                if name == "flags" and not isinstance(value, str):
                    value = json.dumps(value or [])
                elif name == "amendment" and value is not None and not isinstance(value, str):
                    value = json.dumps(value)
                elif name == "embedding" and value is not None:
                    value = np.asarray(value, dtype=np.float32)
                values.append(value)
            copy.write_row(values)
    # Each document's rows are then read from the stage by document and by id: indexed, or a
    # load of 10,000 documents scans the whole stage 10,000 times over (issue 46)
    cur.execute("CREATE INDEX ON stage_chunks (document_key)")
    cur.execute("CREATE INDEX ON stage_chunks (chunk_id)")
    cur.execute("ANALYZE stage_chunks")


def _supersede_version(cur: psycopg.Cursor[Any], version_id: int, until: dt.date) -> int:
    cur.execute(
        "UPDATE legal_chunks SET status = 'superseded', valid_to = %s, updated_at = now() "
        "WHERE version_id = %s AND status = 'current'",
        (until, version_id),
    )
    return cur.rowcount


def load_partition(
    conn: psycopg.Connection[Any],
    jurisdiction: str,
    *,
    registry_keys: Sequence[str],
    documents: Sequence[DocumentVersionInput],
    chunks: Sequence[dict[str, Any]],
    today: dt.date | None = None,
    run_id: str | None = None,
) -> LoadStats:
    """Load one jurisdiction's chunks (see the module docstring for the rules); what changed in
    its current units is recorded as run ``run_id``'s (``store_changes``, in the same
    transaction) and listed in ``stats.changes``."""
    today = today or dt.date.today()
    stats = LoadStats(jurisdiction)
    loaded_keys = {d.document_key for d in documents}
    stray = {c["document_key"] for c in chunks} - loaded_keys
    if stray:
        raise StoreError(f"chunks of documents without a version in this load: {sorted(stray)}")
    prepare(conn)
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"legal_chunks:{jurisdiction}",))
        # what a load can change: its documents' units and those of documents no longer
        # registered (retired below); the others' are not read (issue 46)
        unregistered = _absent(cur, jurisdiction, registry_keys, None)  # retired below
        scope = sorted(loaded_keys | {key for key, _ in unregistered})
        before = snapshot(cur, jurisdiction, scope)
        _stage(cur, assign_eids(chunks))
        for doc in documents:
            version_id, valid_from = _version_for(cur, jurisdiction, doc, today, stats)
            cur.execute(_UPSERT, {"version_id": version_id, "valid_from": valid_from,
                                  "document_key": doc.document_key, "today": today})  # fmt: skip
            flags = [row[0] for row in cur.fetchall()]
            stats.inserted += sum(1 for f in flags if f)
            stats.updated += sum(1 for f in flags if not f)
            cur.execute(
                "SELECT count(*) FROM stage_chunks WHERE document_key = %s", (doc.document_key,)
            )
            staged = int(cur.fetchone()[0])  # type: ignore[index]
            stats.unchanged += staged - len(flags)
            cur.execute(
                "UPDATE legal_chunks c SET status = 'superseded', valid_to = %s, "
                "updated_at = now() WHERE c.version_id = %s AND c.status = 'current' AND NOT "
                "EXISTS (SELECT 1 FROM stage_chunks s WHERE s.chunk_id = c.chunk_id)",
                (today, version_id),
            )
            stats.superseded += cur.rowcount
        # Documents removed from the registry: retired, not left current.
        for key, rows in _retire_versions(cur, unregistered, today).items():
            stats.superseded += rows
            stats.retired_documents.append(key)
        stats.changes = record_unit_changes(
            cur, jurisdiction, before, run_id or _run_id(), documents=scope
        )
        _set_setting(cur, f"loaded:{jurisdiction}", dt.datetime.now(dt.UTC).isoformat())
    # Issue 46: the jurisdiction's own HNSW index, created past PARTIAL_INDEX_MIN_ROWS current
    # rows, dropped below (after the load's transaction block; partial_indexes.sync_partial_index).
    sync_partial_index(conn, jurisdiction, min_rows=PARTIAL_INDEX_MIN_ROWS)
    return stats


def _absent(
    cur: psycopg.Cursor[Any], jurisdiction: str, keep: Sequence[str], only: Sequence[str] | None
) -> list[tuple[str, int]]:
    """The current versions of ``jurisdiction``'s documents not in ``keep`` (of those in
    ``only``, when given): (document key, version id), by key."""
    # one row a document (its current version), compared here with ``keep``; a load found the
    # unregistered ones from its current units before (a DISTINCT over 222,000 rows, 0.27 s at
    # 10,000 documents)
    cur.execute(
        "SELECT document_key, version_id FROM document_versions WHERE jurisdiction = %s "
        "AND status = 'current' AND (%s::text[] IS NULL OR document_key = ANY(%s)) "
        "ORDER BY document_key",
        (jurisdiction, None if only is None else list(only), None if only is None else list(only)),
    )  # fmt: skip
    kept = set(keep)
    return [(str(key), int(version)) for key, version in cur.fetchall() if key not in kept]


def _retire_versions(
    cur: psycopg.Cursor[Any], versions: Sequence[tuple[str, int]], today: dt.date
) -> dict[str, int]:
    """Retire ``versions`` (document key, version id: :func:`_absent`'s): the version
    ``retired`` from ``today``, its current rows superseded from ``today`` and its scheduled
    rows (a point in time an amendment makes later) ended before they start. The rows stay,
    dated: ``history`` and ``--as-of`` still read them. Returns the rows ended, by document
    key."""
    retired: dict[str, int] = {}
    for key, version_id in versions:
        cur.execute(
            "UPDATE document_versions SET status = 'retired', valid_to = %s WHERE version_id = %s",
            (today, version_id),
        )
        rows = _supersede_version(cur, version_id, today)
        cur.execute(
            "UPDATE legal_chunks SET status = 'superseded', valid_to = GREATEST(valid_from, %s), "
            "updated_at = now() WHERE version_id = %s AND status = 'scheduled'",
            (today, version_id),
        )
        retired[str(key)] = rows + cur.rowcount
    return retired


def retire_documents(
    conn: psycopg.Connection[Any],
    jurisdiction: str,
    *,
    keep: Sequence[str] = (),
    only: Sequence[str] | None = None,
    today: dt.date | None = None,
    run_id: str | None = None,
) -> dict[str, int]:
    """Retire, outside a load, the documents of ``jurisdiction`` no longer registered (not in
    ``keep``; of ``only``, when given), as :func:`load_partition` retires them, under the same
    advisory lock: the next load of the jurisdiction finds nothing more to retire. Returns the
    rows ended, by document key (a document without a current version is not named). The units
    it ended are recorded as run ``run_id``'s changes (``store_changes``), and their documents'
    served fingerprints forgotten (``served_documents``: registered again, they are processed)."""
    today = today or dt.date.today()
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"legal_chunks:{jurisdiction}",))
        # only the retired documents' units change: theirs are compared, not the jurisdiction's
        absent = _absent(cur, jurisdiction, keep, only)
        keys = [key for key, _ in absent]
        before = snapshot(cur, jurisdiction, keys)
        retired = _retire_versions(cur, absent, today)
        record_unit_changes(cur, jurisdiction, before, run_id or _run_id(), keys)
        forget_served(cur, jurisdiction, keep=keep, only=only)
        return retired


def documents_served(conn: psycopg.Connection[Any]) -> dict[str, list[str]]:
    """The keys of the documents with a current version (rows ``ask`` may serve), by
    jurisdiction."""
    served: dict[str, list[str]] = {}
    with conn.cursor() as cur:
        cur.execute(
            "SELECT DISTINCT jurisdiction, document_key FROM document_versions "
            "WHERE status = 'current' ORDER BY jurisdiction, document_key"
        )
        for jurisdiction, key in cur.fetchall():
            served.setdefault(str(jurisdiction), []).append(str(key))
    return served


def absent_terms(conn: psycopg.Connection[Any], terms: Sequence[str]) -> list[str]:
    """The ``terms`` that occur in no current unit (full-text, English stemming; a term of
    stop words alone is never absent)."""
    if not terms:
        return []
    with conn.cursor() as cur:
        cur.execute(
            "SELECT t FROM unnest(%s::text[]) t WHERE numnode(plainto_tsquery('english', t)) "
            "> 0 AND NOT EXISTS (SELECT 1 FROM legal_chunks c WHERE c.status = 'current' "
            "AND c.tsv @@ plainto_tsquery('english', t))",
            (list(terms),),
        )
        return [str(r[0]) for r in cur.fetchall()]


def jurisdictions_served(conn: psycopg.Connection[Any]) -> list[str]:
    """The jurisdictions with a current document version (rows ``ask`` may serve), sorted."""
    return list(documents_served(conn))


def _version_for(
    cur: psycopg.Cursor[Any],
    jurisdiction: str,
    doc: DocumentVersionInput,
    today: dt.date,
    stats: LoadStats,
) -> tuple[int, dt.date]:
    """The current version of ``doc``: reused when its sha256 and jurisdiction are unchanged,
    else a new version, the previous one superseded from the new ``valid_from``."""
    cur.execute(
        "SELECT version_id, sha256, valid_from, jurisdiction FROM document_versions "
        "WHERE document_key = %s AND status = 'current'",
        (doc.document_key,),
    )
    current = cur.fetchone()
    if current is not None and current[1] == doc.sha256 and current[3] == jurisdiction:
        return int(current[0]), current[2]
    valid_from = doc.effective_date
    if current is None:
        # A document coming back (after retirement) is in force again from now, not from its
        # original effective date: the retired period stays a gap in the history.
        cur.execute(
            "SELECT max(valid_to) FROM document_versions WHERE document_key = %s",
            (doc.document_key,),
        )
        last_end = cur.fetchone()[0]  # type: ignore[index]
        if last_end is not None and valid_from < last_end:
            valid_from = max(today, last_end)
    else:
        if valid_from <= current[2]:
            valid_from = today
        cur.execute(
            "UPDATE document_versions SET status = 'superseded', valid_to = %s "
            "WHERE version_id = %s",
            (valid_from, current[0]),
        )
        stats.superseded += _supersede_version(cur, int(current[0]), valid_from)
    # Always a new version (even for content seen before): history is never rewritten.
    cur.execute(
        "INSERT INTO document_versions (document_key, jurisdiction, sha256, valid_from, status) "
        "VALUES (%s, %s, %s, %s, 'current') RETURNING version_id",
        (doc.document_key, jurisdiction, doc.sha256, valid_from),
    )
    version_id = int(cur.fetchone()[0])  # type: ignore[index]
    stats.new_versions.append(doc.document_key)
    return version_id, valid_from


def rows_without_vectors(
    conn: psycopg.Connection[Any], jurisdiction: str, model_id: str
) -> list[tuple[int, str, str | None, str]]:
    """Rows of a jurisdiction (any status) with no vector of ``model_id`` (after a model switch,
    superseded rows too): (row_id, label, title, text)."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT row_id, label, title, text FROM legal_chunks WHERE jurisdiction = %s "
            "AND (embedding IS NULL OR model_id IS DISTINCT FROM %s) ORDER BY row_id",
            (jurisdiction, model_id),
        )
        return [(int(r[0]), r[1], r[2], r[3]) for r in cur.fetchall()]


def set_vectors(
    conn: psycopg.Connection[Any],
    model_id: str,
    rows: Sequence[tuple[int, np.ndarray, int]],
) -> None:
    """Store vectors of ``model_id`` on rows by row id, in one transaction."""
    prepare(conn)
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            "UPDATE legal_chunks SET embedding = %s, model_id = %s, embedding_windows = %s, "
            "updated_at = now() WHERE row_id = %s",
            [(_as_array(vec), model_id, n, row_id) for row_id, vec, n in rows],
        )


# ---------------------------------------------------------------------------------------------
# Reading


def _day(value: Any) -> dt.date | None:
    """A row's date: a date, its ISO text (rows read back from Parquet), or None (None or NaN
    when not set)."""
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(value) if isinstance(value, str) and value else None


def served_on(row: dict[str, Any], day: dt.date | None = None) -> bool:
    """Whether a chunk row is current on ``day`` (today by default: the status the load gives
    it): not ended by then, and not a point in time an amendment makes later."""
    day = day or dt.date.today()
    ends, starts = _day(row.get("in_force_to")), _day(row.get("in_force_from"))
    if ends is not None and ends <= day:
        return False
    amended = row.get("amendment")
    return not (isinstance(amended, str | dict) and amended and starts is not None
                and starts > day)  # fmt: skip


def in_force_clause(as_of: dt.date | None, alias: str = "") -> tuple[str, tuple[Any, ...]]:
    """SQL condition (and parameters) for rows current now, or in force on ``as_of``;
    ``alias`` qualifies the columns (``"c"`` -> ``c.status``)."""
    a = f"{alias}." if alias else ""
    if as_of is None:
        return f"{a}status = 'current'", ()
    return f"{a}valid_from <= %s AND ({a}valid_to IS NULL OR {a}valid_to > %s)", (as_of, as_of)


def chunk_filters(
    jurisdictions: Sequence[str] | None, as_of: dt.date | None, alias: str = "c"
) -> tuple[str, list[Any]]:
    """SQL condition (and parameters) for the chunks in force (:func:`in_force_clause`) of
    ``jurisdictions`` (all when empty), on ``legal_chunks`` as ``alias``."""
    where, params = in_force_clause(as_of, alias=alias)
    values: list[Any] = list(params)
    if jurisdictions:
        where += f" AND {alias}.jurisdiction = ANY(%s)"
        values.append(list(jurisdictions))
    return where, values


# k-NN under a jurisdiction filter (issues 16, 46). HNSW cannot filter inside the graph: an
# iterative scan walks the nearest neighbours of the whole table and drops the rows of other
# jurisdictions, so the fewer rows a filter keeps, the more it walks and the more it misses
# (at 100k rows over 36 jurisdictions, a 3% jurisdiction: recall@10 0.94-0.96, p95 2.1-2.7x
# the unfiltered p95).
# A filter whose rows are few is searched exactly instead: its rows through the B-tree on
# (jurisdiction, status), every distance computed, a top-k sort (recall 1). The threshold is
# where the exact search stops beating the HNSW scan: see EXACT_SCAN_MAX_ROWS. A jurisdiction
# over PARTIAL_INDEX_MIN_ROWS current rows gets its own partial HNSW index
# (:mod:`.partial_indexes`, kept by load_partition), and a filter on such jurisdictions scans
# each one's own graph (``partial``), preferred to both.
KnnStrategy = Literal["exact", "hnsw", "partial"]

# Largest number of rows of the asked jurisdictions searched exactly; above it, the HNSW index.
# Measured with ``bench/bench_scale.py --crossover 50`` (100k rows, 36 jurisdictions of 672 to
# 23,917 rows, each alone, both statements interleaved, ef_search 100; BENCHMARKS.md "Filtered
# search at 100k rows over 36 jurisdictions"): exact/HNSW p95 0.76 at 2,994 rows, 0.94 at 3,376,
# 1.25 at 3,944, 1.49 at 4,832, 2.07 at 6,090 (two earlier runs of a first exact statement that
# joined before sorting, grouped and interleaved rows on disk: <= 1.12 up to 3,376, 1.28-1.42 at
# 3,944); p50 crosses at ~2,700 rows. Up to here HNSW finds only 0.91-0.97 of the true top 10,
# the exact search all of it. The HNSW side gets slower as the table grows around a filter of
# the same size, so at more than 100k rows this is conservative.
EXACT_SCAN_MAX_ROWS = 3500

# A jurisdiction with more current rows than this gets its own partial HNSW index
# (load_partition -> partial_indexes.sync_partial_index), and a filter on it is searched through
# that graph, exactly or not (issue 46). A graph of a few thousand rows finds the whole top 10 at
# ef_search 100 and beats the exact search: at 100k rows, the 3% jurisdiction (2,994 rows)
# through its own graph 1.000 recall at p50/p95 3.8/5.3 ms, 0.75x the unfiltered p95, against
# 13-24 / 18-37 ms exactly (BENCHMARKS.md "Serving at a million units"). Below ~1,000 rows the
# exact search costs ~2-3 ms (issue 16's crossover) and the planner itself prefers the B-tree.
PARTIAL_INDEX_MIN_ROWS = 1000


def scope_rows(conn: psycopg.Connection[Any], jurisdictions: Sequence[str]) -> float:
    """The planner's own estimate of the rows of ``jurisdictions`` (every status), read from
    the statistics ``ANALYZE`` keeps (rows x the jurisdiction's share in ``pg_stats``).

    Cheap (catalog rows only), but as fresh as the last (auto)analyze: a jurisdiction the
    statistics do not know yet counts 0 rows, and is searched exactly (right, but slower when
    it is big) until autovacuum analyzes the table.
    """
    return read_scope(conn, jurisdictions).total


def _choose(scope: Scope | None, as_of: dt.date | None) -> KnnStrategy:
    if scope is None:
        return "hnsw"
    if as_of is None and partial_usable(scope, EXACT_SCAN_MAX_ROWS):
        return "partial"
    if scope.total <= EXACT_SCAN_MAX_ROWS:
        return "exact"
    return "hnsw"


def knn_strategy(
    conn: psycopg.Connection[Any],
    jurisdictions: Sequence[str] | None,
    as_of: dt.date | None = None,
) -> KnnStrategy:
    """``partial`` for current rows (no ``as_of``) of jurisdictions that each have their partial
    HNSW index (over :data:`PARTIAL_INDEX_MIN_ROWS` current rows) or hold at most
    :data:`EXACT_SCAN_MAX_ROWS` rows, at least one indexed; else ``exact`` for a filter on
    jurisdictions holding at most :data:`EXACT_SCAN_MAX_ROWS` rows; else ``hnsw`` (always
    without a filter: on a small table the planner scans exactly itself). One catalog round
    trip with a filter, none without."""
    if not jurisdictions:
        return "hnsw"
    return _choose(read_scope(conn, jurisdictions), as_of)


def knn_statement(columns: str, joins: str, where: str, strategy: KnnStrategy) -> str:
    """The top-k statement by cosine distance over ``legal_chunks c`` and ``joins``, for the
    rows that pass ``where`` (on ``c`` only); it selects ``columns`` and ``distance``.
    Parameters, for either strategy: the query vector, the ``where`` parameters, the limit.
    (``partial`` has a statement of its own: :func:`knn_query`.)

    ``hnsw`` orders by the indexed distance, so the planner may walk the HNSW index (on a
    session with ``hnsw.iterative_scan`` on, filters still return k rows). ``exact`` first takes
    the top k of ``legal_chunks`` alone, ordered by ``distance + 0``: an expression the index
    cannot produce in order, so the plan is exact whatever the planner thinks of the index (the
    filter's rows through the B-tree, every distance, a top-k sort); only those k rows are
    joined.
    """
    if strategy == "hnsw":
        return (
            f"SELECT {columns}, c.embedding <=> %s AS distance FROM legal_chunks c {joins} "
            f"WHERE {where} AND c.embedding IS NOT NULL ORDER BY distance LIMIT %s"
        )
    if strategy != "exact":
        raise ValueError(f"knn_statement: no single-filter statement for {strategy!r}")
    return (
        f"SELECT {columns}, t.distance FROM (SELECT c.row_id, (c.embedding <=> %s) + 0 AS "
        f"distance FROM legal_chunks c WHERE {where} AND c.embedding IS NOT NULL "
        f"ORDER BY distance LIMIT %s) t JOIN legal_chunks c ON c.row_id = t.row_id {joins} "
        "ORDER BY t.distance"
    )


def knn_query(
    conn: psycopg.Connection[Any],
    columns: str,
    joins: str,
    limit: int,
    *,
    jurisdictions: Sequence[str] | None = None,
    as_of: dt.date | None = None,
    strategy: KnnStrategy | None = None,
) -> tuple[str, list[Any], KnnStrategy]:
    """The top-``limit`` statement (:func:`knn_statement`, or for ``partial`` one arm per
    jurisdiction: :func:`.partial_indexes.partial_statement`), its parameters after the query
    vector, and its strategy (:func:`knn_strategy` unless ``strategy`` says which; ``partial``
    asked where it cannot apply -- no filter, ``as_of``, too many jurisdictions -- runs ``hnsw``).
    """
    scope = None
    if jurisdictions and strategy in (None, "partial"):
        scope = read_scope(conn, jurisdictions)
    chosen = strategy or _choose(scope, as_of)
    if chosen == "partial":
        if scope is None or as_of is not None or not 0 < len(scope.rows) <= PARTIAL_MAX_ARMS:
            chosen = "hnsw"
        else:
            arms = arms_of(scope)
            return partial_statement(columns, joins, arms), partial_parameters(arms, limit), chosen
    where, values = chunk_filters(jurisdictions, as_of)
    return knn_statement(columns, joins, where, chosen), [*values, int(limit)], chosen


def nearest(
    conn: psycopg.Connection[Any],
    vector: np.ndarray,
    k: int,
    *,
    jurisdictions: Sequence[str] | None = None,
    as_of: dt.date | None = None,
    ef_search: int = 100,
    strategy: KnnStrategy | None = None,
) -> list[dict[str, Any]]:
    """Top-``k`` chunks by cosine distance, filtered: exact for a filter on few rows, through
    the jurisdictions' own partial HNSW indexes where they have them, else via the whole
    table's HNSW index (:func:`knn_strategy`, unless ``strategy`` says which).

    pgvector's iterative index scan (``hnsw.iterative_scan``) keeps scanning until ``k`` rows
    pass the filters, so a filtered query still returns ``k`` rows when they exist.
    """
    prepare(conn)
    vec = _as_array(vector)
    with conn.transaction(), conn.cursor() as cur:
        query, values, _ = knn_query(
            conn,
            "c.chunk_id::text AS chunk_id, c.document_key, c.jurisdiction, c.label, "
            "c.section_label, c.title, c.page_start",
            "",
            k,
            jurisdictions=jurisdictions,
            as_of=as_of,
            strategy=strategy,
        )
        cur.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.ef_search', %s, true), "
            "set_config('plan_cache_mode', 'force_custom_plan', true)",
            (str(int(ef_search)),),
        )
        cur.execute(query, (vec, *values))
        names = [d.name for d in cur.description or []]
        rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    rows.sort(key=lambda r: r["distance"])  # relaxed order: re-sort the k rows exactly
    return rows


def explain_nearest(conn: psycopg.Connection[Any], dimension: int) -> str:
    """The plan of a k-NN query with exact scans and sorts discouraged.

    On a small table the planner rightly prefers an exact scan and sort; discouraging those shows
    the query can run through the HNSW index, as it does on its own once the table is large.
    """
    prepare(conn)
    probe = np.zeros(dimension, dtype=np.float32)
    probe[0] = 1.0
    with conn.transaction(), conn.cursor() as cur:
        for setting in ("enable_seqscan", "enable_sort", "enable_bitmapscan"):
            cur.execute("SELECT set_config(%s, 'off', true)", (setting,))
        cur.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        cur.execute(
            "EXPLAIN SELECT chunk_id FROM legal_chunks WHERE status = 'current' "
            "ORDER BY embedding <=> %s LIMIT 10",
            (probe,),
        )
        return "\n".join(row[0] for row in cur.fetchall())


def store_stats(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Per jurisdiction: current, superseded and embedded rows, with the model in force."""
    model = store_setting(conn, "embedding_model")
    dimension = column_dimension(conn)
    with conn.cursor() as cur:
        cur.execute(
            "SELECT jurisdiction, count(*) FILTER (WHERE status = 'current'), "
            "count(*) FILTER (WHERE status = 'superseded'), "
            "count(*) FILTER (WHERE status = 'current' AND embedding IS NOT NULL) "
            "FROM legal_chunks GROUP BY jurisdiction ORDER BY jurisdiction"
        )
        return [
            {
                "jurisdiction": row[0],
                "current_rows": row[1],
                "superseded_rows": row[2],
                "embedded_rows": row[3],
                "model_id": model,
                "dimension": dimension,
            }
            for row in cur.fetchall()
        ]


def served_fingerprint(conn: psycopg.Connection[Any]) -> tuple[str, int, int]:
    """What the store serves now, as one sha256 over every current row (its document, version,
    unit id and content sha256, in a fixed order), with the number of documents and of rows: an
    evaluation's identity (equal fingerprints: the same rows were answered from)."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT encode(sha256(convert_to(coalesce(string_agg(document_key || ':' || "
            "version_id::text || ':' || chunk_id::text || ':' || content_sha256, ',' "
            "ORDER BY document_key, version_id, chunk_id), ''), 'UTF8')), 'hex'), "
            "count(DISTINCT document_key), count(*) FROM legal_chunks WHERE status = 'current'"
        )
        row = cur.fetchone()
    assert row is not None
    return str(row[0]), int(row[1]), int(row[2])
