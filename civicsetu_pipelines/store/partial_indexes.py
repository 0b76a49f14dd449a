"""Per-jurisdiction partial HNSW indexes: filtered k-NN at exact quality at scale (issue 46).

The whole-table HNSW index cannot filter inside its graph: a query on one jurisdiction walks the
neighbourhood of the whole table and drops other jurisdictions' rows, so the smaller the
jurisdiction's share, the more it misses (a 3% jurisdiction: recall@10 0.94-0.96 at 100k rows).
A jurisdiction with more than ``legal_chunks.PARTIAL_INDEX_MIN_ROWS`` current rows (1,000) gets
its OWN graph, a partial index over its current rows::

    CREATE INDEX legal_chunks_hnsw_<slug>_<hash> ON legal_chunks
        USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)
        WHERE jurisdiction = '<J>' AND status = 'current'

A query ``WHERE c.status = 'current' AND c.jurisdiction = %s ... ORDER BY distance LIMIT k`` is
answered from that graph alone (nothing to filter out). The planner only proves that the query
implies the index's predicate when the parameter's value is known at plan time: sessions run
``plan_cache_mode = force_custom_plan`` (``retrieval.prepare_session``, ``legal_chunks.nearest``),
else a prepared statement's generic plan (from its 6th execution) would fall back to the whole
table's graph. Several jurisdictions (a state and the Act: the answer path's usual scope) are one
such scan each -- or an exact scan for one with no index of its own, when it is small
(``legal_chunks.EXACT_SCAN_MAX_ROWS``) --
merged in SQL: ``UNION ALL`` of the arms, ``ORDER BY distance LIMIT k`` (:func:`partial_statement`).

Why partial indexes rather than list partitioning by jurisdiction: partitioning is a migration of
the versioned live table (its primary key, the unique constraints on ``chunk_id`` and
``(chunk_id, version_id)`` and the one-transaction ``load_partition`` all span jurisdictions),
and an unfiltered query would then merge 36 partitions' graphs. A partial index is an ordinary
index next to the whole-table one: created or dropped per jurisdiction with no data moved, no
schema change, and the unfiltered path untouched.

Maintenance: :func:`sync_partial_index` (called at the end of ``load_partition``) creates the
index of a jurisdiction whose current rows exceed the threshold and drops it when they no longer
do; :func:`sync_partial_indexes` does every jurisdiction at once (an operator's or a benchmark's
call). DDL is composed with ``psycopg.sql`` (``Identifier`` for the index name, derived from the
code as ``[a-z0-9_]`` plus a hash; ``Literal`` for the code in the predicate); every other
statement is parameterized.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import psycopg
from psycopg import sql

PARTIAL_INDEX_PREFIX = "legal_chunks_hnsw_"
# A query on more jurisdictions than this is not split into one index scan per jurisdiction: it
# keeps a large share of the table, which the whole-table index filters well.
PARTIAL_MAX_ARMS = 8
# The build's memory (session setting for the CREATE INDEX only): the graph of 30k 384-d rows is
# ~60 MB, of 240k ~480 MB; past maintenance_work_mem pgvector finishes the build on disk, slower.
PARTIAL_BUILD_MEMORY = "1GB"

# How long an index build waits for the table's write locks held by other transactions (loads of
# other jurisdictions) before it gives up for this time (:func:`sync_partial_index`).
PARTIAL_LOCK_TIMEOUT_S = 30.0

SyncAction = Literal["created", "dropped", "kept", "absent", "deferred"]


def partial_index_name(jurisdiction: str) -> str:
    """The partial index of ``jurisdiction``: the prefix, the code as ``[a-z0-9_]`` (at most 32
    characters) and 8 hex digits of its sha256, so distinct codes never share a name and the name
    stays under PostgreSQL's 63 bytes."""
    slug = re.sub(r"[^a-z0-9]+", "_", jurisdiction.lower()).strip("_")[:32] or "j"
    digest = hashlib.sha256(jurisdiction.encode()).hexdigest()[:8]
    return f"{PARTIAL_INDEX_PREFIX}{slug}_{digest}"


def _create_sql(jurisdiction: str) -> sql.Composed:
    return sql.SQL(
        "CREATE INDEX {} ON legal_chunks USING hnsw (embedding vector_cosine_ops) "
        "WITH (m = 16, ef_construction = 64) WHERE jurisdiction = {} AND status = 'current'"
    ).format(sql.Identifier(partial_index_name(jurisdiction)), sql.Literal(jurisdiction))


def _drop_sql(name: str) -> sql.Composed:
    return sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name))


def _index_state(cur: psycopg.Cursor[Any], name: str) -> bool | None:
    """True: a valid index named ``name`` on legal_chunks; False: an invalid one (a failed
    concurrent build); None: none."""
    cur.execute(
        "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE i.indrelid = 'legal_chunks'::regclass AND c.relname = %s",
        (name,),
    )
    row = cur.fetchone()
    return None if row is None else bool(row[0])


def sync_partial_index(
    conn: psycopg.Connection[Any],
    jurisdiction: str,
    *,
    min_rows: int,
    lock_timeout_s: float = PARTIAL_LOCK_TIMEOUT_S,
) -> SyncAction:
    """Give ``jurisdiction`` its partial HNSW index when it holds more than ``min_rows`` current
    rows, drop the index when it no longer does; what was done.

    One transaction (a savepoint inside the caller's), under the jurisdiction's load lock (the
    advisory lock of ``load_partition``), so it never races a load of the same jurisdiction. A
    plain ``CREATE INDEX``: writes to ``legal_chunks`` wait for the build (seconds for tens of
    thousands of rows) and, inside a caller's transaction, until it commits; readers keep
    reading. A drop (only when a jurisdiction falls back to ``min_rows`` rows or fewer) takes
    the table's ACCESS EXCLUSIVE lock: readers too wait until the caller commits. Either waits
    at most ``lock_timeout_s`` for other transactions' writes (a load of another jurisdiction
    not yet committed); when it cannot have the table then, or when two such builds would wait
    for each other (a deadlock, which PostgreSQL breaks), nothing is changed ("deferred": the
    jurisdiction is searched through the whole table's index until the next load or
    :func:`sync_partial_indexes`), and the caller's transaction goes on.
    """
    name = partial_index_name(jurisdiction)
    try:
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"legal_chunks:{jurisdiction}",)
            )
            cur.execute(
                "SELECT count(*) FROM legal_chunks WHERE jurisdiction = %s AND status = 'current'",
                (jurisdiction,),
            )
            current = int(cur.fetchone()[0])  # type: ignore[index]
            state = _index_state(cur, name)
            if state is None and current <= min_rows:
                return "absent"
            if state is True and current > min_rows:
                return "kept"
            cur.execute(
                "SELECT current_setting('lock_timeout'), "
                "set_config('lock_timeout', %s, true), "
                "set_config('maintenance_work_mem', %s, true)",
                (f"{max(1, round(lock_timeout_s * 1000))}ms", PARTIAL_BUILD_MEMORY),
            )
            previous = str(cur.fetchone()[0])  # type: ignore[index]
            if state is not None:  # too small now, or invalid (a failed concurrent build)
                cur.execute(_drop_sql(name))
            if current > min_rows:
                cur.execute(_create_sql(jurisdiction))
            cur.execute("SELECT set_config('lock_timeout', %s, true)", (previous,))
            return "created" if current > min_rows else "dropped"
    except (psycopg.errors.LockNotAvailable, psycopg.errors.DeadlockDetected):
        return "deferred"


def sync_partial_indexes(conn: psycopg.Connection[Any], *, min_rows: int) -> dict[str, SyncAction]:
    """:func:`sync_partial_index` for every jurisdiction in the table, and any partial index of a
    jurisdiction no longer in it dropped (by name: ``<prefix>...``)."""
    with conn.cursor() as cur:
        cur.execute("SELECT DISTINCT jurisdiction FROM legal_chunks ORDER BY jurisdiction")
        codes = [str(r[0]) for r in cur.fetchall()]
        cur.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = 'legal_chunks'::regclass AND c.relname LIKE %s",
            (PARTIAL_INDEX_PREFIX.replace("_", r"\_") + "%",),
        )
        existing = {str(r[0]) for r in cur.fetchall()}
    actions = {code: sync_partial_index(conn, code, min_rows=min_rows) for code in codes}
    known = {partial_index_name(code) for code in codes}
    for name in sorted(existing - known):
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(_drop_sql(name))
        actions[name] = "dropped"
    return actions


# ---------------------------------------------------------------------------------------------
# Choosing and writing the statement

_SCOPE = """
SELECT m.val, greatest(t.reltuples, 0) * m.freq
FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace,
     pg_stats s, unnest(s.most_common_vals::text::text[], s.most_common_freqs) AS m(val, freq)
WHERE t.oid = 'legal_chunks'::regclass AND s.schemaname = n.nspname AND s.tablename = t.relname
  AND s.attname = 'jurisdiction' AND m.val = ANY(%(codes)s)
UNION ALL
SELECT c.relname, NULL FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'legal_chunks'::regclass AND i.indisvalid AND c.relname = ANY(%(names)s)
"""


@dataclass
class Scope:
    """The asked jurisdictions as the catalog sees them: the planner's estimate of each one's
    rows (every status; 0 when the statistics do not know it) and those with a valid partial
    index."""

    rows: dict[str, float] = field(default_factory=dict)
    indexed: frozenset[str] = frozenset()

    @property
    def total(self) -> float:
        return sum(self.rows.values())


def read_scope(conn: psycopg.Connection[Any], jurisdictions: Sequence[str]) -> Scope:
    """One catalog round trip: ``pg_stats`` most-common-value frequencies x ``reltuples`` per
    jurisdiction, and which of them have a valid partial index."""
    codes = list(dict.fromkeys(jurisdictions))
    names = {partial_index_name(code): code for code in codes}
    with conn.cursor() as cur:
        cur.execute(_SCOPE, {"codes": codes, "names": list(names)})
        found = cur.fetchall()
    rows = dict.fromkeys(codes, 0.0)
    indexed = set()
    for key, estimate in found:
        if estimate is None:
            indexed.add(names[str(key)])
        else:
            rows[str(key)] = float(estimate)
    return Scope(rows, frozenset(indexed))


def partial_usable(scope: Scope, max_exact_rows: float) -> bool:
    """Whether the scope can be searched one jurisdiction at a time: at most
    :data:`PARTIAL_MAX_ARMS` jurisdictions, at least one with its partial index, and every other
    one small enough to be searched exactly."""
    return (
        0 < len(scope.rows) <= PARTIAL_MAX_ARMS
        and bool(scope.indexed)
        and all(code in scope.indexed or n <= max_exact_rows for code, n in scope.rows.items())
    )


def partial_statement(columns: str, joins: str, arms: Sequence[tuple[str, bool]]) -> str:
    """The top-k statement over ``legal_chunks c`` and ``joins`` for current rows, one arm per
    (jurisdiction, indexed): an indexed arm orders by the indexed distance (its partial HNSW
    index), another orders by ``distance + 0`` (exact: the B-tree, every distance, a top-k sort).
    Each arm's top k, merged by distance, the first k joined. It selects ``columns`` and
    ``distance``. Parameters: the query vector, then per arm its jurisdiction and the limit, then
    the limit (:func:`partial_parameters`)."""
    parts = []
    for _, indexed in arms:
        distance = "c.embedding <=> (SELECT v FROM q)"
        if not indexed:  # an expression the index cannot produce in order
            distance = f"({distance}) + 0"
        parts.append(
            f"(SELECT c.row_id, {distance} AS distance FROM legal_chunks c "
            "WHERE c.status = 'current' AND c.jurisdiction = %s AND c.embedding IS NOT NULL "
            "ORDER BY distance LIMIT %s)"
        )
    return (
        "WITH q AS MATERIALIZED (SELECT %s::vector AS v) "
        f"SELECT {columns}, t.distance FROM (SELECT u.row_id, u.distance FROM "
        f"({' UNION ALL '.join(parts)}) u ORDER BY u.distance LIMIT %s) t "
        f"JOIN legal_chunks c ON c.row_id = t.row_id {joins} ORDER BY t.distance"
    )


def partial_parameters(arms: Sequence[tuple[str, bool]], limit: int) -> list[Any]:
    """The parameters of :func:`partial_statement` after the query vector."""
    values: list[Any] = []
    for code, _ in arms:
        values += [code, int(limit)]
    return [*values, int(limit)]


def arms_of(scope: Scope) -> list[tuple[str, bool]]:
    return [(code, code in scope.indexed) for code in scope.rows]
