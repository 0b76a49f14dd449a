"""Ingestion assets: gazette PDFs -> parsed pages -> section chunks -> document catalog.

Thin wrappers over the domain core in :mod:`civicsetu_pipelines.ingest.documents`. Each asset is
partitioned by jurisdiction; a bad document fails its own row (and its check), never the
partition's other documents.
"""

import json
from functools import partial
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from civicsetu_pipelines.base import SetAside, by_document, contained
from civicsetu_pipelines.defs.assets import EAGER, OWNERS
from civicsetu_pipelines.defs.partitions import jurisdiction_partitions
from civicsetu_pipelines.defs.resources import CorpusResource, PostgresResource
from civicsetu_pipelines.ingest import (
    CHUNKS,
    DOCUMENTS,
    PAGES,
    DocumentSpec,
    RuleResult,
    TableSchema,
    amend_partition,
    amendable_titles,
    chunk_rows,
    failed_report,
    fetch_rows,
    instrument_of,
    load_registry,
    page_records,
    parse_rows_cached,
    set_aside_documents,
    validate,
)

# Structure checks whose failures another asset check already reports: a unit the document's
# forms cite but it lacks is a missing REFERENCES target (graph_edges:missing_targets, named
# with where it is cited); `civicsetu inspect` still shows it.
GRAPH_CHECKED = frozenset({"cited_units"})


def _dated(row: dict[str, Any]) -> dict[str, Any]:
    """A chunk row with its point in time as Parquet keeps it: ISO dates (None: the document's
    own), the amendment's evidence as JSON."""
    out = dict(row)
    for name in ("in_force_from", "in_force_to"):
        value = out.get(name)
        out[name] = value.isoformat() if value is not None else None
    out["amendment"] = json.dumps(out["amendment"]) if out.get("amendment") else None
    return out


def _specs(jurisdiction: str) -> list[DocumentSpec]:
    return list(load_registry().documents(jurisdiction))


def _markdown(frame: pd.DataFrame, columns: list[str], limit: int = 12) -> dg.MetadataValue:
    if frame.empty:
        return dg.MetadataValue.md("_no rows_")
    sample = frame[columns].head(limit).map(lambda v: "" if v is None or v != v else str(v))
    sample = sample.apply(lambda col: col.str.slice(0, 80).str.replace("|", "\\|"))
    header = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    body = "\n".join("| " + " | ".join(row) + " |" for row in sample.itertuples(index=False))
    return dg.MetadataValue.md(header + body)


def _check_specs(asset: str, schema: TableSchema) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(
            name=rule.name, asset=asset, description=rule.description, blocking=rule.blocking
        )
        for rule in schema.rules
    ]


def _check_results(
    schema: TableSchema,
    frame: pd.DataFrame,
    asset: str,
    results: list[RuleResult] | None = None,
) -> list[dg.AssetCheckResult]:
    """Each rule of ``schema`` as a check of ``asset``: ``results`` when the frame was
    validated already, else a validation of ``frame``."""
    if results is None:
        results = validate(schema, frame) if not frame.empty else []
    by_name = {r.rule.name: r for r in results}
    out = []
    for rule in schema.rules:
        result = by_name.get(rule.name)
        passed = True if result is None else result.success
        out.append(
            dg.AssetCheckResult(
                asset_key=asset,
                check_name=rule.name,
                passed=passed,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={
                    "unexpected_count": result.unexpected_count if result else 0,
                    "examples": dg.MetadataValue.json(
                        [str(x)[:120] for x in (result.examples if result else [])]
                    ),
                    "validated_by": "great_expectations",
                },
            )
        )
    return out


@dg.asset(
    partitions_def=jurisdiction_partitions,
    io_manager_key="parquet_io",
    group_name="raw",
    kinds={"pdf", "parquet"},
    owners=OWNERS,
    retry_policy=dg.RetryPolicy(max_retries=2, delay=5, backoff=dg.Backoff.EXPONENTIAL),
    check_specs=[
        dg.AssetCheckSpec(
            "all_documents_fetched",
            asset="raw_pdfs",
            description="Every registry document of the jurisdiction was fetched and verified",
        )
    ],
)
def raw_pdfs(context: dg.AssetExecutionContext, corpus: CorpusResource):
    """Gazette PDFs of the jurisdiction, verified against their pinned sha256.

    Offline mirror directories first, then the registry's download URLs (timeouts, retries,
    size cap, conditional GET). Bytes are kept content-addressed under the state directory.
    """
    specs = _specs(context.partition_key)
    rows = fetch_rows(
        specs, mirror_dirs=corpus.mirrors(), cache_dir=corpus.pdf_cache, offline=corpus.offline
    )
    frame = pd.DataFrame(rows)
    failed = frame[frame["status"] == "failed"]
    for _, row in failed.iterrows():
        context.log.error(row["error"])
    yield dg.Output(
        frame,
        metadata={
            "documents": len(frame),
            "failed": len(failed),
            "bytes": int(frame["bytes"].fillna(0).sum()),
            "documents_table": _markdown(frame, ["document_key", "status", "sha256", "source"]),
        },
    )
    yield dg.AssetCheckResult(
        check_name="all_documents_fetched",
        passed=failed.empty,
        metadata={"failed": dg.MetadataValue.json(failed["error"].tolist())},
        description=None if failed.empty else "; ".join(failed["error"].tolist()),
    )


@dg.asset(
    partitions_def=jurisdiction_partitions,
    io_manager_key="parquet_io",
    group_name="core",
    automation_condition=EAGER,
    kinds={"pymupdf", "parquet"},
    owners=OWNERS,
    check_specs=[
        *_check_specs("parsed_pages", PAGES),
        dg.AssetCheckSpec(
            "all_documents_parsed",
            asset="parsed_pages",
            description="Every fetched document parsed without error",
        ),
        dg.AssetCheckSpec(
            "no_pages_need_ocr",
            asset="parsed_pages",
            description="No page was left without text (needs_ocr means Tesseract is missing)",
        ),
    ],
)
def parsed_pages(context: dg.AssetExecutionContext, raw_pdfs: pd.DataFrame, corpus: CorpusResource):
    """Body text of each ingested page with positions, after removing running headers,
    footers, page numbers, other-language and garbled rows (each removal recorded). Pages
    without a text layer are OCR'd (flag ``ocr`` with mean confidence) or flagged
    ``needs_ocr``."""
    registry = load_registry()
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    fetched = raw_pdfs[raw_pdfs["status"] == "ok"] if not raw_pdfs.empty else raw_pdfs
    for index, (_, doc) in enumerate(fetched.iterrows(), 1):
        spec = registry.get(doc["document_key"])
        # said before the work: a scan's OCR takes minutes, and the progress line shows this
        context.log.info(f"document {index}/{len(fetched)}: {spec.key} ...")
        step = partial(
            parse_rows_cached,
            spec, Path(doc["path"]), doc["sha256"], corpus.parse_cache, ocr=corpus.ocr,
        )  # fmt: skip
        done, aside = contained("parse", spec.key, step)
        if done is not None:
            parsed, reused = done
            context.log.info(f"{spec.key}: {'reused the parse of' if reused else 'parsed'} "
                             f"{len(parsed)} pages")  # fmt: skip
            rows.extend(parsed)
            continue
        assert aside is not None
        # a PdfError says what is wrong with the file; anything else is named with its step
        error = (f"{spec.key}: {aside.message}" if aside.error_type == "PdfError"
                 else f"{spec.key}: set aside, {aside.reason()}")  # fmt: skip
        context.log.error(error)
        errors.append(error)
        rows.append(
            {
                "document_key": spec.key,
                "jurisdiction": doc["jurisdiction"],
                "page": 0,
                "text": "",
                "error": error,
            }
        )
    frame = pd.DataFrame(rows)
    ok = frame[frame["error"].isna()] if not frame.empty else frame
    flags = [set(json.loads(f)) for f in ok["flags"]] if not ok.empty else []
    needs_ocr = sum("needs_ocr" in f for f in flags)
    yield dg.Output(
        frame,
        metadata={
            "pages": len(ok),
            "ocr_pages": sum("ocr" in f for f in flags),
            "ocr_unread_pages": sum("ocr_unread" in f for f in flags),
            "needs_ocr_pages": needs_ocr,
            "garbled_pages": sum("garbled" in f for f in flags),
            "failed_documents": dg.MetadataValue.json(errors),
            "sample": _markdown(ok, ["document_key", "page", "method", "text"]),
        },
    )
    yield from _check_results(PAGES, ok, "parsed_pages")
    yield dg.AssetCheckResult(
        check_name="all_documents_parsed",
        passed=not errors,
        metadata={"errors": dg.MetadataValue.json(errors)},
    )
    yield dg.AssetCheckResult(
        check_name="no_pages_need_ocr",
        passed=needs_ocr == 0,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"needs_ocr_pages": needs_ocr},
    )


@dg.multi_asset(
    partitions_def=jurisdiction_partitions,
    group_name="core",
    outs={
        "section_chunks": dg.AssetOut(
            io_manager_key="parquet_io",
            automation_condition=EAGER,
            kinds={"parquet"},
            owners=OWNERS,
            description="Section-aware chunks with legal paths, labels, titles and pages",
        ),
        "document_structure": dg.AssetOut(
            io_manager_key="parquet_io",
            automation_condition=EAGER,
            kinds={"parquet"},
            owners=OWNERS,
            description="Per-document structure report: units, gaps, coverage",
        ),
    },
    check_specs=[
        *_check_specs("section_chunks", CHUNKS),
        dg.AssetCheckSpec(
            "amendments_applied",
            asset="section_chunks",
            description=(
                "Every instruction of an amending instrument (registry `amends:` or named in "
                "its text) was read and applied with certainty; one that was not is named with "
                "its words, and changes nothing"
            ),
        ),
        dg.AssetCheckSpec(
            "documents_set_aside",
            asset="section_chunks",
            description=(
                "No document was set aside: a document whose own chunks fail a blocking check "
                "is left out of this run (its previous rows stay served, it is named here with "
                "what failed) and the other documents of the jurisdiction load"
            ),
        ),
        *_check_specs("document_structure", DOCUMENTS),
        dg.AssetCheckSpec(
            "sections_contiguous",
            asset="document_structure",
            description="Section/rule numbers run 1..N without gaps or duplicates",
        ),
        dg.AssetCheckSpec(
            "structure_sound",
            asset="document_structure",
            description=(
                "Every document's decoded structure passes its error checks (sequence, swallowed "
                "headings, titles, numbered share); a document that fails is kept page by page "
                "(no unit it cannot vouch for reaches the store) and named here with the first "
                "place its structure broke"
            ),
        ),
        dg.AssetCheckSpec(
            "structure_warnings",
            asset="document_structure",
            description="Units far longer than their siblings without the sub-structure to "
            "explain it (units cited but missing are graph_edges' missing_targets check)",
        ),
    ],
)
def section_chunks(context: dg.AssetExecutionContext, parsed_pages: pd.DataFrame):
    """Cut each document into legal units (sections, rules, questions, forms) and split long
    units along their own numbering; ids are UUID5 of (document, unit, legal path)."""
    registry = load_registry()
    chunks: list[dict[str, Any]] = []
    reports: list[dict[str, Any]] = []
    instruments = []
    asides: list[SetAside] = []
    titles = amendable_titles(registry.documents(context.partition_key))
    ok = parsed_pages[parsed_pages["error"].isna()] if not parsed_pages.empty else parsed_pages
    # A document is the unit of failure: an exception in its structure or in reading it as an
    # instrument sets it aside (named with the step, the error and where), and the others load.
    for key, group in ok.groupby("document_key", sort=True):
        spec = registry.get(str(key))
        pages = page_records(group.sort_values("page").to_dict("records"))
        built, aside = contained("structure", spec.key, partial(chunk_rows, spec, pages))
        if built is None:
            assert aside is not None
            asides.append(aside)
            reports.append(failed_report(spec, pages, aside.reason()))
            continue
        rows, report = built
        context.log.info(
            f"{key}: {report['sections']} numbered units, {report['chunks']} chunks, "
            f"coverage {report['coverage']:.4f}, gaps {report['gaps']}"
        )
        step = partial(
            instrument_of, spec.key, spec.title, spec.effective_date,
            [(int(p["page"]), str(p["text"] or "")) for p in pages], kind=str(spec.doc_type),
            amends=spec.amends, repeals=spec.repeals, titles=titles,
        )  # fmt: skip
        instrument, aside = contained("amendments", spec.key, step)
        reports.append(report)
        if aside is not None:
            asides.append(aside)
            continue
        chunks.extend(rows)
        if instrument is not None:
            instruments.append(instrument)
    # Amending and repealing instruments: the units they change get points in time
    amended = amend_partition(chunks, instruments)
    asides += amended.set_aside
    dropped = {a.document_key for a in amended.set_aside}
    chunks = [_dated(row) for row in amended.rows if row["document_key"] not in dropped]
    for done in amended.done:
        context.log.info(f"{done['by']}: {done['kind']} {done['label']} of {done['document']} "
                         f"from {done['date']} (page {done['page']})")  # fmt: skip
    for problem in amended.problems:
        context.log.warning(problem)
    # A defect stays in its document: one whose own chunks fail a blocking check is set
    # aside (named, flagged in document_structure and the catalog; its previous rows stay
    # served), and the partition's other documents go on to load.
    chunk_frame, failing, chunk_results = set_aside_documents(CHUNKS, pd.DataFrame(chunks))
    set_aside = by_document(asides)
    for key, why in failing.items():
        set_aside.setdefault(key, []).extend(f"checks: its chunks fail {w}" for w in why)
    for key, why in set_aside.items():
        context.log.error(f"{key}: set aside (its previous rows stay served): {'; '.join(why)}")
    report_frame = pd.DataFrame(reports)
    if len(report_frame):
        report_frame["set_aside"] = [
            json.dumps(set_aside.get(str(k), [])) for k in report_frame["document_key"]
        ]
    yield dg.Output(
        chunk_frame,
        output_name="section_chunks",
        metadata={
            "chunks": len(chunk_frame),
            "documents": len(report_frame),
            "set_aside": dg.MetadataValue.json(set_aside),
            "min_coverage": float(report_frame["coverage"].min()) if len(report_frame) else 0.0,
            "sample": _markdown(chunk_frame, ["label", "title", "page_start", "text"]),
        },
    )
    yield dg.Output(
        report_frame,
        output_name="document_structure",
        metadata={
            "documents": _markdown(
                report_frame, ["document_key", "sections", "chunks", "coverage", "gaps"]
            )
        },
    )
    yield from _check_results(CHUNKS, chunk_frame, "section_chunks", chunk_results)
    yield dg.AssetCheckResult(
        asset_key="section_chunks",
        check_name="amendments_applied",
        passed=not amended.problems,
        severity=dg.AssetCheckSeverity.WARN,
        description="; ".join(amended.problems)[:1000] or None,
        metadata={
            "instruments": dg.MetadataValue.json([i.key for i in instruments]),
            "applied": dg.MetadataValue.json(amended.done),
            "repealed": dg.MetadataValue.json(amended.repealed),
            "problems": dg.MetadataValue.json(amended.problems),
        },
    )
    yield dg.AssetCheckResult(
        asset_key="section_chunks",
        check_name="documents_set_aside",
        passed=not set_aside,
        severity=dg.AssetCheckSeverity.ERROR,
        description="; ".join(f"{k}: {v[0]}" for k, v in set_aside.items())[:1000] or None,
        metadata={"documents": dg.MetadataValue.json(set_aside)},
    )
    yield from _check_results(DOCUMENTS, report_frame, "document_structure")
    problems = {
        row["document_key"]: {
            "gaps": json.loads(row["gaps"]),
            "duplicates": json.loads(row["duplicates"]),
        }
        for _, row in report_frame.iterrows()
        if json.loads(row["gaps"]) or json.loads(row["duplicates"])
    }
    for check_name, severity in (
        ("structure_sound", dg.AssetCheckSeverity.ERROR),
        ("structure_warnings", dg.AssetCheckSeverity.WARN),
    ):
        wanted = "error" if severity == dg.AssetCheckSeverity.ERROR else "warning"
        failing = {
            row["document_key"]: [
                f"{c['name']}: {c['message']}"
                for c in json.loads(row["checks"])
                if not c["passed"] and c["severity"] == wanted and c["name"] not in GRAPH_CHECKED
            ]
            for _, row in report_frame.iterrows()
        }
        failing = {key: found for key, found in failing.items() if found}
        yield dg.AssetCheckResult(
            asset_key="document_structure",
            check_name=check_name,
            passed=not failing,
            severity=severity,
            description="; ".join(f"{k}: {v[0]}" for k, v in failing.items())[:1000] or None,
            metadata={"documents": dg.MetadataValue.json(failing)},
        )
    yield dg.AssetCheckResult(
        asset_key="document_structure",
        check_name="sections_contiguous",
        passed=not problems,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"problems": dg.MetadataValue.json(problems)},
    )


@dg.asset(
    partitions_def=jurisdiction_partitions,
    group_name="out",
    automation_condition=EAGER,
    kinds={"postgres"},
    owners=OWNERS,
    io_manager_key="parquet_io",
)
def document_catalog(
    context: dg.AssetExecutionContext,
    raw_pdfs: pd.DataFrame,
    parsed_pages: pd.DataFrame,
    document_structure: pd.DataFrame,
    postgres: PostgresResource,
) -> pd.DataFrame:
    """Per-document ingestion summary in Postgres (``documents``, ``document_units``): what
    ``civicsetu stats`` and ``civicsetu sections`` read. Replaced per jurisdiction in one
    transaction."""
    from civicsetu_pipelines.store import (
        build_catalog_rows,
        replace_jurisdiction,
        store_pages,
    )

    registry = load_registry()
    jurisdiction = context.partition_key
    docs, units = build_catalog_rows(
        registry.documents(jurisdiction), raw_pdfs, parsed_pages, document_structure
    )
    with postgres.connect() as conn:
        replace_jurisdiction(conn, jurisdiction, docs, units)
        pages = store_pages(conn, docs, parsed_pages)
    frame = pd.DataFrame(docs)
    context.add_output_metadata(
        {
            "documents": len(frame),
            "pages_stored": pages,
            "failed": int((frame["ingest_status"] == "failed").sum()) if not frame.empty else 0,
            "summary": _markdown(
                frame, ["key", "ingest_status", "pages", "sections", "chunks", "coverage"]
            ),
        }
    )
    return frame
