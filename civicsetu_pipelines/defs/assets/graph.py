"""The legal graph asset: cross-references and rule-to-Act derivation as edges in Postgres."""

from collections import Counter
from typing import Any

import dagster as dg
import pandas as pd

from civicsetu_pipelines.base import neo4j_configured
from civicsetu_pipelines.defs.assets import EAGER, OWNERS, act_document_key, set_aside_check
from civicsetu_pipelines.defs.partitions import jurisdiction_partitions
from civicsetu_pipelines.defs.resources import CorpusResource, Neo4jResource, PostgresResource
from civicsetu_pipelines.graph import (
    ActTitles,
    MatterIndex,
    UnitIndex,
    amendment_edges,
    build_edges,
    cited_from_elsewhere,
    document_rows,
    edge_documents,
    export_csv,
    prescribed_matters,
    read_snapshot,
    replace_edges,
    stored_act_chunks,
    sync_to_neo4j,
    unit_labels,
)
from civicsetu_pipelines.ingest import CITED_KINDS, load_curated_derivations, load_registry
from civicsetu_pipelines.store import record_set_asides, served_on

UNRESOLVED_LIMIT = 0.05
DERIVATION_TARGET = 0.9


# The chunk fields build_edges reads, in the order graph_edges selects them from legal_chunks.
SERVED_NAMES = ("document_key", "chunk_id", "label", "section_label", "text", "unit",
                "parent_id", "ordinal", "title", "chapter", "jurisdiction")  # fmt: skip


def _text(value: Any) -> str | None:
    """A title or chapter as read from Parquet or Postgres (NaN or None when there is none)."""
    return value if isinstance(value, str) else None


@dg.asset(
    partitions_def=jurisdiction_partitions,
    group_name="out",
    automation_condition=EAGER,
    kinds={"postgres"},
    owners=OWNERS,
    deps=["legal_chunks"],
    check_specs=[
        dg.AssetCheckSpec(
            "unresolved_references",
            asset="graph_edges",
            description="At most 5% of each document's internal references are unresolved "
            "(a warning: the gazette's own references to units it does not hold)",
        ),
        dg.AssetCheckSpec(
            "missing_targets",
            asset="graph_edges",
            description="Warns once per cited unit that does not exist (with its evidence), and "
            "for curated derivations that do not apply",
        ),
        dg.AssetCheckSpec(
            "documents_set_aside",
            asset="graph_edges",
            description="No document's edges raised: a document whose edges cannot be built is "
            "named here with the error, its partial edges taken back, the others' edges built",
        ),
        dg.AssetCheckSpec(
            "derivation_coverage",
            asset="graph_edges",
            description="At least 90% of the substantive rules (not definitions or short title) "
            "of each rules document derive from an Act section",
        ),
    ],
)
def graph_edges(
    context: dg.AssetExecutionContext,
    section_chunks: pd.DataFrame,
    postgres: PostgresResource,
):
    """HAS_PART, REFERENCES, DERIVED_FROM, EXTERNAL_REFERENCE, AMENDED_BY and REPEALED_BY
    edges with their evidence
    (chunk, offsets, quoted phrase), replaced per jurisdiction in one transaction. In a state's
    rules, "section N" resolves to the RERA Act's section N (read from the store). A rule
    derives from the Act section its opening names; rules naming none take the curated table
    (data/derivations.yaml, each entry with a note)."""
    jurisdiction = context.partition_key
    registry = load_registry()
    act_key = act_document_key()
    specs = registry.documents(jurisdiction)
    registered = [s.key for s in specs]
    doc_types = {spec.key: str(spec.doc_type) for spec in registry.documents()}
    rows = section_chunks.to_dict("records")
    # the graph of what is served today; the amended and repealed texts keep their AMENDED_BY
    # and REPEALED_BY edges (history)
    chunks = [r for r in rows if served_on(r)]
    dated = amendment_edges(rows)
    loaded = {str(c["document_key"]) for c in chunks}
    with postgres.connect() as conn:
        # Issue 46: the edges of the documents this run loaded are made again, the others' stay.
        # The whole graph is made again when one of them is a document others' references
        # resolve into (the Act, rules, regulations), when other documents' edges point into
        # one of them or into a removed document, or when every document was processed.
        removed = sorted(edge_documents(conn, jurisdiction) - set(registered))
        kept = [key for key in registered if key not in loaded]
        whole = (
            not kept
            or any(doc_types.get(key) in CITED_KINDS for key in loaded)
            or bool(cited_from_elsewhere(conn, jurisdiction, sorted(loaded | set(removed))))
        )
        if whole:
            # a document this run did not load (left as it was, its fetch failed, or it was
            # set aside) keeps its previous rows, so its edges come from them
            served = conn.execute(
                "SELECT document_key, chunk_id::text, label, section_label, text, unit, "
                "parent_id::text, ordinal, title, chapter, jurisdiction FROM legal_chunks "
                "WHERE status = 'current' AND document_key = ANY(%s)",
                (kept,),
            ).fetchall() if kept else []  # fmt: skip
            if served:
                chunks += [dict(zip(SERVED_NAMES, row, strict=True)) for row in served]
                context.log.info(f"edges of {len({r[0] for r in served})} documents left as "
                                 "they were, from their served rows")  # fmt: skip
        else:
            context.log.info(f"edges of the {len(loaded)} documents loaded in this run; the "
                             f"other {len(kept)} documents' edges stay as they are")  # fmt: skip
        labels_by_document: dict[str, list[tuple[str, str]]] = {}
        for chunk in chunks:
            labels_by_document.setdefault(str(chunk["document_key"]), []).append(
                (str(chunk["label"]), str(chunk["chunk_id"]))
            )
        rules = sorted(k for k in registered if doc_types.get(k) == "rules")
        if not whole:  # the rules an order's "rule N" resolves into, as they are served
            labels_by_document.update(
                unit_labels(conn, [k for k in rules if k not in labels_by_document])
            )
        indexes = {key: UnitIndex.from_chunks(pairs) for key, pairs in labels_by_document.items()}
        act = [c for c in chunks if c["document_key"] == act_key] or stored_act_chunks(
            conn, act_key
        )
        if act_key not in indexes:
            pairs = [(str(c["label"]), str(c["chunk_id"])) for c in act]
            indexes[act_key] = UnitIndex.from_chunks(pairs)
            if not act:
                context.log.warning(
                    f"{act_key} is not in the store yet: references to Act sections stay "
                    "unresolved until CENTRAL is materialized"
                )
        sections = {
            str(c["section_label"]): (_text(c.get("title")), _text(c.get("chapter")))
            for c in act if c["unit"] == "section"
        }  # fmt: skip
        matters = prescribed_matters(act)
        build = build_edges(
            chunks,
            doc_types=doc_types,
            act_key=act_key,
            indexes=indexes,
            curated=load_curated_derivations(),
            act_titles=ActTitles.from_units(
                (label, title, chapter) for label, (title, chapter) in sections.items()
            ),
            matters=MatterIndex.build(
                matters, {label: title or "" for label, (title, _) in sections.items()}
            ),
            rules_documents=None if whole else [k for k in rules if k in indexes],
        )
        build.edges += dated
        scope = None if whole else sorted(loaded | set(removed))
        written = replace_edges(conn, jurisdiction, build.edges, document_rows(build), only=scope)
        record_set_asides(conn, jurisdiction, "graph", build.set_aside)
    for aside in build.set_aside:
        context.log.error(f"{aside.document_key}: its edges set aside: {aside.reason()}")
    counts = Counter(edge.edge_type for edge in build.edges)
    rates = {key: round(build.unresolved_rate(key), 4) for key in sorted(build.internal)}
    coverage = build.derivation_coverage()
    missing = build.missing_targets()
    curated_used = sum(1 for e in build.edges if e.basis == "curated")
    yield dg.MaterializeResult(
        metadata={
            "edges": written,
            "documents_linked": len(loaded) if not whole else len(set(registered)),
            "whole_graph": whole,
            **{f"edges_{kind.lower()}": n for kind, n in sorted(counts.items())},
            "derived_from_curated": curated_used,
            "unresolved": len(build.unresolved),
            "unresolved_rate_by_document": dg.MetadataValue.json(rates),
            "missing_targets": dg.MetadataValue.json(missing),
            "derivation_coverage": dg.MetadataValue.json(coverage),
            "unresolved_sample": dg.MetadataValue.json(build.unresolved[:50]),
        }
    )
    yield set_aside_check(build.set_aside)
    over = {key: rate for key, rate in rates.items() if rate > UNRESOLVED_LIMIT}
    # a warning: a gazette whose own references point to units it does not hold (Gujarat's
    # Form A citing a rule 28(1) its rules lack) loads soundly; the references are listed
    yield dg.AssetCheckResult(
        check_name="unresolved_references",
        passed=not over,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"over_limit": dg.MetadataValue.json(over), "rates": dg.MetadataValue.json(rates)},
    )
    for line in missing_lines(missing):
        context.log.warning(line)
    for problem in build.curated_problems:
        context.log.warning(f"curated derivation {problem['document']} {problem['rule']}: "
                            f"{problem['problem']}")  # fmt: skip
    yield dg.AssetCheckResult(
        check_name="missing_targets",
        passed=not missing and not build.curated_problems,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "missing_targets": len(missing),
            "targets": dg.MetadataValue.md(_missing_table(missing)),
            "curated_problems": dg.MetadataValue.json(build.curated_problems),
        },
    )
    short = {
        doc: row for doc, row in coverage.items() if row["substantive_share"] < DERIVATION_TARGET
    }
    yield dg.AssetCheckResult(
        check_name="derivation_coverage",
        passed=not short,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "below_target": dg.MetadataValue.json(short),
            "coverage": dg.MetadataValue.json(coverage),
        },
    )


MISSING_NAMED = 6  # a document's missing targets named in its warning; the check lists all


def missing_lines(missing: list[dict[str, Any]]) -> list[str]:
    """One warning per citing document: how many units it cites that do not exist, the first
    :data:`MISSING_NAMED` of them with where and how often (a rules PDF served before the Act
    cites dozens: one line each buried the run's other messages); the check's table holds all."""
    by_document: dict[str, list[dict[str, Any]]] = {}
    for item in missing:
        by_document.setdefault(item["document"], []).append(item)
    lines = []
    for document, items in by_document.items():
        named = "; ".join(
            f"{i['target']} (cited {i['citations']}x in {', '.join(i['cited_in'])} as "
            f"{i['phrase']!r})"
            for i in items[:MISSING_NAMED]
        )
        more = len(items) - MISSING_NAMED
        rest = f"; and {more} more (the missing_targets check lists them)" if more > 0 else ""
        lines.append(f"{document}: {len(items)} cited unit(s) do not exist: {named}{rest}")
    return lines


def _missing_table(missing: list[dict[str, Any]]) -> str:
    if not missing:
        return "Every cited unit exists."
    lines = [
        "| document | missing target | citations | cited in | phrase |",
        "|---|---|---|---|---|",
    ]
    for item in missing:
        phrase = " ".join(str(item["phrase"]).split()).replace("|", "\\|")
        lines.append(
            f"| {item['document']} | {item['target']} | {item['citations']} | "
            f"{', '.join(item['cited_in'])} | {phrase} |"
        )
    return "\n".join(lines)


NEO4J_DESCRIPTION = (
    "Mirrors this jurisdiction's documents, units and edges into Neo4j with the official driver: "
    "uniqueness constraints, UNWIND batches with MERGE, idempotent; edges and units that "
    "vanished from Postgres are removed. "
)
NEO4J_STATUS = (
    "Enabled: NEO4J_URI is set, so ingest_job includes this asset."
    if neo4j_configured()
    else "Disabled: NEO4J_URI is not set, so ingest_job leaves this asset out. Set NEO4J_URI "
    "(and NEO4J_USER, NEO4J_PASSWORD, NEO4J_DATABASE) to enable it; graph_export writes the "
    "same graph as CSV for `neo4j-admin database import` without a server."
)


@dg.asset(
    partitions_def=jurisdiction_partitions,
    group_name="out",
    automation_condition=EAGER if neo4j_configured() else None,
    kinds={"neo4j"},
    owners=OWNERS,
    deps=["graph_edges"],
    description=NEO4J_DESCRIPTION + NEO4J_STATUS,
)
def neo4j_graph(
    context: dg.AssetExecutionContext, postgres: PostgresResource, neo4j: Neo4jResource
) -> dg.MaterializeResult:
    jurisdiction = context.partition_key
    with postgres.connect() as conn:
        snapshot = read_snapshot(conn, jurisdiction)
    with neo4j.driver() as driver:
        counts = sync_to_neo4j(driver, snapshot, jurisdiction, database=neo4j.database or None)
    context.log.info(f"{jurisdiction}: Neo4j mirror {counts}")
    return dg.MaterializeResult(metadata={**counts, "uri": neo4j.uri})


@dg.asset(
    partitions_def=jurisdiction_partitions,
    group_name="out",
    automation_condition=EAGER,
    kinds={"csv", "neo4j"},
    owners=OWNERS,
    deps=["graph_edges"],
)
def graph_export(
    context: dg.AssetExecutionContext, postgres: PostgresResource, corpus: CorpusResource
) -> dg.MaterializeResult:
    """This jurisdiction's graph (with the Act units its edges reach) as CSV files in the format
    `neo4j-admin database import full` takes, plus an `import.sh` with the command: a graph a
    user can load into Neo4j without running the pipeline. `civicsetu graph export` writes every
    jurisdiction into one import. With it, a picture of the network as it is served (its rules
    and the Act sections they cite or derive from), in the metadata and in
    `.civicsetu/reports/graph/<J>.png`: drawn here, off the ingest path (matplotlib's import and
    the drawing were a second of every jurisdiction's first run)."""
    jurisdiction = context.partition_key
    with postgres.connect() as conn:
        snapshot = read_snapshot(conn, jurisdiction)
    out = corpus.reports / "neo4j_import" / jurisdiction
    files = export_csv(snapshot, out)
    from civicsetu_pipelines.graph import render_network  # matplotlib: only when drawn

    picture = render_network(
        [e for e in snapshot.edges if e["jurisdiction"] == jurisdiction],
        title=f"{jurisdiction}: rules and the Act sections they cite or derive from",
        out_path=corpus.reports / "graph" / f"{jurisdiction}.png",
        act_document=act_document_key(),
    )
    return dg.MaterializeResult(
        metadata={
            "network": dg.MetadataValue.md(picture.markdown()),
            "network_png": dg.MetadataValue.path(str(picture.path)),
            "directory": dg.MetadataValue.path(str(out)),
            "files": dg.MetadataValue.json(sorted(path.name for path in files.values())),
            "documents": len(snapshot.documents),
            "units": len(snapshot.units),
            "edges": len(snapshot.edges),
            "import": dg.MetadataValue.md(f"`cd {out} && ./import.sh` (stop Neo4j first)"),
        }
    )
