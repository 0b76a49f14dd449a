"""The served documents asset: after every step of a jurisdiction's run, which documents it
processed (and why), which it left as they were, and the fingerprint each is now served with
(issue 46: documents as the unit of incremental work, see ``ingest.worklist``)."""

import json
from typing import Any

import dagster as dg
import pandas as pd

from civicsetu_pipelines.defs.assets import EAGER, OWNERS
from civicsetu_pipelines.defs.partitions import jurisdiction_partitions
from civicsetu_pipelines.defs.resources import PostgresResource
from civicsetu_pipelines.ingest import ServedDocument, load_registry


def _targets(value: Any) -> tuple[str, ...]:
    return tuple(json.loads(value)) if isinstance(value, str) else ()


@dg.asset(
    partitions_def=jurisdiction_partitions,
    group_name="out",
    automation_condition=EAGER,
    kinds={"postgres"},
    owners=OWNERS,
    deps=["legal_chunks", "graph_edges", "document_catalog", "akn_documents", "state_provisions"],
)
def served_documents(
    context: dg.AssetExecutionContext,
    raw_pdfs: pd.DataFrame,
    parsed_pages: pd.DataFrame,
    document_structure: pd.DataFrame,
    postgres: PostgresResource,
) -> dg.MaterializeResult:
    """Each document of the jurisdiction with its state after this run: processed (new,
    changed, forced, or of a processed document's amendment family) and now served with its
    fingerprint; failed or set aside (no fingerprint kept, so the next run takes it again); or
    left as it was. The fingerprints are what the next run's ``raw_pdfs`` compares (Postgres
    ``served_documents``); written last, so a run stopped halfway leaves them as they were."""
    from civicsetu_pipelines.store import record_served, set_aside_keys

    jurisdiction = context.partition_key
    registered = [s.key for s in load_registry().documents(jurisdiction)]
    raw = {r["document_key"]: r for r in raw_pdfs.to_dict("records")}
    reports = {r["document_key"]: r for r in document_structure.to_dict("records")}
    parse_failed = (
        set(parsed_pages.loc[parsed_pages["error"].notna(), "document_key"])
        if len(parsed_pages) else set()
    )  # fmt: skip
    processed = [k for k in registered
                 if raw.get(k, {}).get("work") == "process" or k in reports]  # fmt: skip
    with postgres.connect() as conn:
        later = set_aside_keys(conn, jurisdiction)
        states: dict[str, str] = {}
        served: dict[str, ServedDocument] = {}
        for key in processed:
            row, report = raw.get(key, {}), reports.get(key)
            aside = json.loads(report.get("set_aside") or "[]") if report else []
            if row.get("status") != "ok":
                states[key] = "fetch failed"
            elif key in parse_failed:
                states[key] = "parse failed"
            elif report is None or aside or key in later:
                states[key] = "set aside"
            else:
                states[key] = "served"
                served[key] = ServedDocument(
                    str(row["fingerprint"]), _targets(report.get("targets"))
                )
        unserved = [k for k, state in states.items() if state != "served"]
        record_served(conn, jurisdiction, served=served, unserved=unserved,
                      registered=registered, run_id=context.run.run_id)  # fmt: skip
    kept = len(registered) - len(processed)
    context.log.info(f"{jurisdiction}: {len(served)} documents processed and served, "
                     f"{len(unserved)} failed or set aside, {kept} left as they were")  # fmt: skip
    table = ["| document | why | state |", "|---|---|---|"]
    for key in processed[:200]:
        why = raw.get(key, {}).get("reason") or (reports.get(key) or {}).get("work_reason")
        table.append(f"| {key} | {why or ''} | {states[key]} |")
    if len(processed) > 200:
        table.append(f"| ... {len(processed) - 200} more | | |")
    return dg.MaterializeResult(
        metadata={
            "processed": len(processed),
            "served": len(served),
            "failed_or_set_aside": dg.MetadataValue.json(unserved),
            "left_as_they_were": kept,
            "registered": len(registered),
            "documents": dg.MetadataValue.md("\n".join(table)),
        }
    )
