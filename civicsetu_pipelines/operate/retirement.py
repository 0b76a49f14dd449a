"""Retiring documents outside a run: what ``civicsetu documents remove`` does at once, and what
``civicsetu materialize -j J`` does for a jurisdiction left without a registered document (no
partition runs for it: the partitions are the registry's jurisdictions).

Pure domain code over psycopg (no Dagster). Each table is written by its own home (one home per
SQL schema, every statement parameterized): the versions and units by
:func:`~civicsetu_pipelines.store.retire_documents` (the same retirement a load makes), the
catalog by :func:`~civicsetu_pipelines.store.forget_documents`, the graph by
:func:`~civicsetu_pipelines.graph.drop_document_edges` and the provisions by
:func:`~civicsetu_pipelines.provisions.drop_document_provisions`, all in ONE transaction: a
reader sees the document served whole or not at all. The rows stay, dated (``history`` and
``--as-of`` read them); nothing of the document is current afterwards. The Neo4j mirror, when
one is configured, is then synced to what Postgres holds (:func:`mirror_jurisdiction`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from civicsetu_pipelines.base import (
    ENV_NEO4J_DATABASE,
    ENV_NEO4J_PASSWORD,
    ENV_NEO4J_URI,
    ENV_NEO4J_USER,
    ENV_NEO4J_USERNAME,
    env_value,
    neo4j_configured,
)
from civicsetu_pipelines.graph import drop_document_edges, read_snapshot, sync_to_neo4j
from civicsetu_pipelines.provisions import drop_document_provisions
from civicsetu_pipelines.store import forget_documents, retire_documents


@dataclass
class Retirement:
    """What retiring documents of one jurisdiction took out of service."""

    jurisdiction: str
    documents: list[str] = field(default_factory=list)  # every key retired or uncatalogued
    units: int = 0  # rows that were served (current or scheduled) and are now ended
    versions: int = 0  # document versions retired
    catalog: int = 0  # catalog entries taken out
    edges: int = 0
    provisions: int = 0
    divergences: int = 0

    def summary(self) -> str:
        return (f"retired {self.units} unit(s) of {self.versions} document version(s), "
                f"{self.edges} graph edge(s), {self.catalog} catalog entr"
                f"{'y' if self.catalog == 1 else 'ies'}, {self.provisions} provision(s) and "
                f"{self.divergences} divergence flag(s)")  # fmt: skip


def retire_jurisdiction_documents(
    conn: psycopg.Connection[Any],
    jurisdiction: str,
    *,
    registered: Sequence[str],
    only: Sequence[str] | None = None,
    today: dt.date | None = None,
) -> Retirement:
    """Retire, in one transaction, ``jurisdiction``'s stored documents that are not
    ``registered`` (of ``only``, when given): their versions and units, catalog entries, graph
    edges (from and to them) and provisions; with nothing registered, everything the
    jurisdiction still has in those tables. What a run of the jurisdiction would retire, so
    the next run finds nothing more to do (and a second call, nothing)."""
    whole = not registered
    done = Retirement(jurisdiction)
    with conn.transaction():
        ended = retire_documents(conn, jurisdiction, keep=registered, only=only, today=today)
        uncatalogued = forget_documents(conn, jurisdiction, keep=registered, only=only)
        keys = sorted(set(ended) | set(uncatalogued))
        done.documents = keys
        done.versions = len(ended)
        done.units = sum(ended.values())
        done.catalog = len(uncatalogued)
        if keys or whole:
            done.edges = drop_document_edges(conn, jurisdiction, keys, whole=whole)
            done.provisions, done.divergences = drop_document_provisions(
                conn, jurisdiction, keys, whole=whole
            )
    return done


def mirror_jurisdiction(
    conn: psycopg.Connection[Any], jurisdiction: str, driver: Any = None
) -> dict[str, int] | None:
    """Sync the Neo4j mirror of ``jurisdiction`` to Postgres as it is now (its retired
    documents, units and edges deleted there); None when no Neo4j server is configured
    (``NEO4J_URI``) and no ``driver`` is given. Call it with ``conn`` idle (after the
    retirement committed)."""
    if driver is None and not neo4j_configured():
        return None  # nothing to sync: the jurisdiction's snapshot is not even read
    snapshot = read_snapshot(conn, jurisdiction)
    if driver is not None:
        return sync_to_neo4j(driver, snapshot, jurisdiction, database=_neo4j_database())
    import neo4j

    password = env_value(ENV_NEO4J_PASSWORD, "")
    user = env_value(ENV_NEO4J_USER, env_value(ENV_NEO4J_USERNAME, "neo4j"))
    auth = (user, password) if password else None
    with neo4j.GraphDatabase.driver(env_value(ENV_NEO4J_URI, ""), auth=auth) as live:
        live.verify_connectivity()
        return sync_to_neo4j(live, snapshot, jurisdiction, database=_neo4j_database())


def _neo4j_database() -> str | None:
    return env_value(ENV_NEO4J_DATABASE, "") or None
