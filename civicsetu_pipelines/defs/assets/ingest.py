"""Ingestion assets: gazette PDFs -> parsed pages -> section chunks -> document catalog.

Thin wrappers over the domain core in :mod:`civicsetu_pipelines.ingest.documents`. Each asset is
partitioned by jurisdiction; a bad document fails its own row (and its check), never the
partition's other documents.
"""

import json
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
from pydantic import Field

from civicsetu_pipelines.base import SetAside, by_document, code_hash, contained, output_settings
from civicsetu_pipelines.defs.assets import EAGER, OWNERS, act_document_key
from civicsetu_pipelines.defs.partitions import jurisdiction_partitions
from civicsetu_pipelines.defs.resources import CorpusResource, PostgresResource
from civicsetu_pipelines.ingest import (
    CHUNKS,
    DOCUMENTS,
    PAGES,
    DocumentSpec,
    Instrument,
    RuleResult,
    ServedDocument,
    TableSchema,
    amend_partition,
    amendable_titles,
    amendment_closure,
    chunk_rows,
    document_fingerprint,
    failed_report,
    fetch_rows,
    instrument_of,
    load_registry,
    page_records,
    parse_rows_cached,
    plan_work,
    set_aside_documents,
    validate,
    work_context,
)

# Structure checks whose failures another asset check already reports: a unit the document's
# forms cite but it lacks is a missing REFERENCES target (graph_edges:missing_targets, named
# with where it is cited); `civicsetu inspect` still shows it.
GRAPH_CHECKED = frozenset({"cited_units"})
# The columns of a parsed_pages frame without a page (the run processed no document)
EMPTY_PAGES = ["document_key", "jurisdiction", "page", "text", "error", "flags"]
# The asset that records what a run served: a run without it leaves no document as it was.
SERVED = dg.AssetKey("served_documents")


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


class WorkConfig(dg.Config):
    """Which documents a jurisdiction's run processes."""

    every_document: bool = Field(
        default=False,
        description="Process every document of the jurisdiction, not only those whose "
        "fingerprint changed (`civicsetu materialize --force`)",
    )


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
def raw_pdfs(
    context: dg.AssetExecutionContext,
    config: WorkConfig,
    corpus: CorpusResource,
    postgres: PostgresResource,
):
    """Gazette PDFs of the jurisdiction, verified against their pinned sha256, each with the
    run's plan for it (``work``: process or keep, and why).

    Offline mirror directories first, then the registry's download URLs (timeouts, retries,
    size cap, conditional GET). Bytes are kept content-addressed under the state directory. A
    document whose fingerprint is the one it is served with is left as it is (issue 46,
    :mod:`civicsetu_pipelines.ingest.worklist`); the steps after this one take only the
    documents to process.
    """
    from civicsetu_pipelines.store import read_served, served_fingerprint_of

    jurisdiction = context.partition_key
    specs = _specs(jurisdiction)
    rows = fetch_rows(
        specs, mirror_dirs=corpus.mirrors(), cache_dir=corpus.pdf_cache, offline=corpus.offline
    )
    act_key = act_document_key()
    act_here = any(spec.key == act_key for spec in specs)
    # A document is left as it was only by a run that records what it serves (served_documents
    # in its selection); a run of some assets only (tests, the UI) processes every document.
    selection = context.run.asset_selection
    records = not selection or SERVED in selection
    every = config.every_document or not records
    served: dict[str, ServedDocument] = {}
    act = None
    if records:  # what it recorded is compared with fingerprints made as the next run makes them
        with postgres.connect() as conn:
            served = read_served(conn, jurisdiction)
            act = None if act_here else served_fingerprint_of(conn, act_key)
    work = work_context(code_hash(), output_settings(), act)
    by_key = {spec.key: spec for spec in specs}
    fingerprints = {
        row["document_key"]: document_fingerprint(
            by_key[row["document_key"]].model_dump(mode="json"), row["sha256"], work
        )
        if row["status"] == "ok" else None
        for row in rows
    }  # fmt: skip
    plan = plan_work([spec.key for spec in specs], fingerprints, served, every=every)
    for row in rows:
        key = row["document_key"]
        row["fingerprint"] = fingerprints[key]
        row["work"] = "process" if key in plan.reasons else "keep"
        row["reason"] = plan.reasons.get(key)
        row["served_targets"] = json.dumps(list(served[key].targets) if key in served else [])
    context.log.info(f"{jurisdiction}: {plan.summary()}")
    frame = pd.DataFrame(rows)
    failed = frame[frame["status"] == "failed"]
    for _, row in failed.iterrows():
        context.log.error(row["error"])
    yield dg.Output(
        frame,
        metadata={
            "documents": len(frame),
            "to_process": len(plan.process),
            "left_as_they_were": len(plan.keep),
            "removed": dg.MetadataValue.json(plan.removed),
            "failed": len(failed),
            "bytes": int(frame["bytes"].fillna(0).sum()),
            "documents_table": _markdown(
                frame[frame["work"] == "process"] if len(frame) else frame,
                ["document_key", "reason", "status", "sha256", "source"],
            ),
        },
    )
    yield dg.AssetCheckResult(
        check_name="all_documents_fetched",
        passed=failed.empty,
        metadata={"failed": dg.MetadataValue.json(failed["error"].tolist())},
        description=None if failed.empty else "; ".join(failed["error"].tolist()),
    )


def page_progress(context: dg.AssetExecutionContext, key: str) -> Callable[[int, int], None]:
    """A document's pages read, said every :data:`PROGRESS_SECONDS` (a scan's OCR takes
    minutes: the run says which page it is on)."""
    said = [time.monotonic()]

    def hear(done: int, total: int) -> None:
        if time.monotonic() - said[0] >= PROGRESS_SECONDS or (done == total and total > 20):
            said[0] = time.monotonic()
            context.log.info(f"{key}: page {done}/{total} read")

    return hear


PROGRESS_SECONDS = 10.0


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
    # the documents this run processes (raw_pdfs' plan); the others stay as they are served
    fetched = (raw_pdfs[(raw_pdfs["status"] == "ok") & (raw_pdfs["work"] == "process")]
               if not raw_pdfs.empty else raw_pdfs)  # fmt: skip
    for index, (_, doc) in enumerate(fetched.iterrows(), 1):
        spec = registry.get(doc["document_key"])
        # said before the work: a scan's OCR takes minutes, and the progress line shows this
        context.log.info(f"document {index}/{len(fetched)}: {spec.key} ...")
        step = partial(
            parse_rows_cached,
            spec, Path(doc["path"]), doc["sha256"], corpus.parse_cache, ocr=corpus.ocr,
            progress=page_progress(context, spec.key),
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
    # no document to parse (every one left as it was): the columns the next steps read
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=EMPTY_PAGES)
    ok = frame[frame["error"].isna()] if not frame.empty else frame
    flags = [set(json.loads(f)) for f in ok["flags"]] if not ok.empty else []
    needs_ocr = sum("needs_ocr" in f for f in flags)
    yield dg.Output(
        frame,
        metadata={
            "documents": len(fetched),
            "left_as_they_were": int((raw_pdfs["work"] == "keep").sum()) if len(raw_pdfs) else 0,
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
def section_chunks(
    context: dg.AssetExecutionContext,
    raw_pdfs: pd.DataFrame,
    parsed_pages: pd.DataFrame,
    corpus: CorpusResource,
):
    """Cut each document into legal units (sections, rules, questions, forms) and split long
    units along their own numbering; ids are UUID5 of (document, unit, legal path). The
    documents this run processes come with their amendment family (the instruments that amend
    them and the documents they amend, read from their cached parse): an amended unit's points
    in time are made from every instrument that amends it."""
    registry = load_registry()
    chunks: list[dict[str, Any]] = []
    reports: list[dict[str, Any]] = []
    instruments: list[Instrument] = []
    asides: list[SetAside] = []
    titles = amendable_titles(registry.documents(context.partition_key))
    # each document's pages decoded when it is processed, and let go after (decoded all at
    # once, a 10,000-document state's pages were held through the whole step: its peak, with
    # the chunks, 3.95 GiB)
    rows_of: dict[str, list[int]] = {}
    if not parsed_pages.empty:
        ok = parsed_pages["error"].isna().to_numpy()
        for position, key in enumerate(parsed_pages["document_key"].astype(str)):
            if ok[position]:
                rows_of.setdefault(key, []).append(position)

    def pages_of(key: str) -> list[dict[str, Any]]:
        rows = parsed_pages.iloc[rows_of[key]].sort_values("page")
        return page_records(rows.to_dict("records"))

    fetched = {r["document_key"]: r for r in raw_pdfs.to_dict("records") if r["status"] == "ok"}
    served_targets = {k: json.loads(r["served_targets"]) for k, r in fetched.items()}
    targets: dict[str, list[str]] = {}
    family: dict[str, str] = {}
    seen: set[str] = set()
    # A document is the unit of failure: an exception in its structure or in reading it as an
    # instrument sets it aside (named with the step, the error and where), and the others load.
    while todo := sorted(k for k in [*rows_of, *family] if k not in seen):
        for key in todo:
            seen.add(key)
            spec = registry.get(key)
            if key in rows_of:
                pages = pages_of(key)
            else:  # of the amendment family: its parse is cached
                row = fetched[key]
                parse = partial(parse_rows_cached, spec, Path(row["path"]), row["sha256"],
                                corpus.parse_cache, ocr=corpus.ocr)  # fmt: skip
                parsed, aside = contained("parse", key, parse)
                if parsed is None:
                    assert aside is not None
                    asides.append(aside)
                    continue
                pages = page_records(parsed[0])
                context.log.info(f"{key}: processed with its amendment family ({family[key]})")
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
            targets[key] = ([*instrument.amends, *instrument.repeals]
                            if instrument is not None else [])  # fmt: skip
            report["targets"] = json.dumps(targets[key])
            report["work_reason"] = family.get(key)
            reports.append(report)
            if aside is not None:
                asides.append(aside)
                continue
            chunks.extend(rows)
            if instrument is not None:
                instruments.append(instrument)
        # what amendments tie to the documents processed so far (issue 46: documents as the
        # unit of work; the rest stay as they are served)
        ties = amendment_closure(seen, {**served_targets, **targets})
        family.update({k: why for k, why in ties.items() if k in fetched and k not in family})
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
    ``civicsetu stats`` and ``civicsetu sections`` read. The rows of the documents this run
    processed (and of those no longer registered) are replaced in one transaction."""
    from civicsetu_pipelines.store import (
        build_catalog_rows,
        replace_jurisdiction,
        store_pages,
    )

    registry = load_registry()
    jurisdiction = context.partition_key
    specs = registry.documents(jurisdiction)
    # the rows of the documents this run processed; the others' rows stay as they are
    processed = set(raw_pdfs.loc[raw_pdfs["work"] == "process", "document_key"]) if len(
        raw_pdfs) else set()  # fmt: skip
    docs, units = build_catalog_rows(
        [s for s in specs if s.key in processed], raw_pdfs, parsed_pages, document_structure
    )
    with postgres.connect() as conn:
        replace_jurisdiction(conn, jurisdiction, docs, units, registered=[s.key for s in specs])
        pages = store_pages(conn, docs, parsed_pages)
    frame = pd.DataFrame(docs)
    context.add_output_metadata(
        {
            "documents": len(frame),
            "left_as_they_were": len(specs) - len(frame),
            "pages_stored": pages,
            "failed": int((frame["ingest_status"] == "failed").sum()) if not frame.empty else 0,
            "summary": _markdown(
                frame, ["key", "ingest_status", "pages", "sections", "chunks", "coverage"]
            ),
        }
    )
    return frame
