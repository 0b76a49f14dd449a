"""The legal graph asset: cross-references and rule-to-Act derivation as edges in Postgres."""

from collections import Counter

import dagster as dg
import pandas as pd

from civicsetu_pipelines.defs.assets import OWNERS
from civicsetu_pipelines.defs.partitions import jurisdiction_partitions
from civicsetu_pipelines.defs.resources import PostgresResource
from civicsetu_pipelines.graph import build_edges, replace_edges
from civicsetu_pipelines.references import UnitIndex
from civicsetu_pipelines.registry import load_registry

UNRESOLVED_LIMIT = 0.05


@dg.asset(
    partitions_def=jurisdiction_partitions,
    group_name="out",
    kinds={"postgres"},
    owners=OWNERS,
    deps=["legal_chunks"],
    check_specs=[
        dg.AssetCheckSpec(
            "unresolved_references",
            asset="graph_edges",
            description="At most 5% of each document's internal references are unresolved",
        )
    ],
)
def graph_edges(
    context: dg.AssetExecutionContext, section_chunks: pd.DataFrame, postgres: PostgresResource
):
    """HAS_PART, REFERENCES, DERIVED_FROM and EXTERNAL_REFERENCE edges with their evidence
    (chunk, offsets, quoted phrase), replaced per jurisdiction in one transaction. In a state's
    rules, "section N" resolves to the RERA Act's section N (read from the store)."""
    jurisdiction = context.partition_key
    registry = load_registry()
    act_key = next(
        (s.key for s in registry.documents() if str(s.doc_type) == "act"), "rera_act_2016"
    )
    chunks = section_chunks.to_dict("records")
    indexes: dict[str, UnitIndex] = {}
    for key, group in section_chunks.groupby("document_key"):
        indexes[str(key)] = UnitIndex.from_chunks(
            zip(group["label"], group["chunk_id"], strict=True)
        )
    with postgres.connect() as conn:
        if act_key not in indexes:
            rows = conn.execute(
                "SELECT label, chunk_id::text FROM legal_chunks "
                "WHERE document_key = %s AND status = 'current'",
                (act_key,),
            ).fetchall()
            indexes[act_key] = UnitIndex.from_chunks((r[0], r[1]) for r in rows)
            if not rows:
                context.log.warning(
                    f"{act_key} is not in the store yet: references to Act sections stay "
                    "unresolved until CENTRAL is materialized"
                )
        doc_types = {spec.key: str(spec.doc_type) for spec in registry.documents()}
        build = build_edges(chunks, doc_types=doc_types, act_key=act_key, indexes=indexes)
        written = replace_edges(conn, jurisdiction, build.edges)
    counts = Counter(edge.edge_type for edge in build.edges)
    rates = {key: round(build.unresolved_rate(key), 4) for key in sorted(build.internal)}
    yield dg.MaterializeResult(
        metadata={
            "edges": written,
            **{f"edges_{kind.lower()}": n for kind, n in sorted(counts.items())},
            "unresolved": len(build.unresolved),
            "unresolved_rate_by_document": dg.MetadataValue.json(rates),
            "unresolved_sample": dg.MetadataValue.json(build.unresolved[:50]),
        }
    )
    over = {key: rate for key, rate in rates.items() if rate > UNRESOLVED_LIMIT}
    yield dg.AssetCheckResult(
        check_name="unresolved_references",
        passed=not over,
        metadata={"over_limit": dg.MetadataValue.json(over), "rates": dg.MetadataValue.json(rates)},
    )
