"""A document is the unit of failure in every per-document step (issue 35): an exception while one
document is parsed, structured, read as an instrument or given its graph edges sets that document
aside, named with the step, the error and where; its previous rows stay served; the jurisdiction's
other documents load and its run succeeds. A state government order (G.O.) whose one amending
instruction is in no numbered paragraph, framed by its abstract, "Read the following" list,
ORDER, NOTIFICATION, signature and "Copy to" list, amends its rules from its date.

The faults a pipeline bug would raise are injected into the real steps (the structure decoder,
the reference reader) for one document each; everything else is the real pipeline on generated
PDFs and the embedded Postgres.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from civicsetu_pipelines.store import read_stats, unit_history
from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines_tests.amending_documents import GO, ORDER_DATE, RULES_TITLE, rules_pages
from civicsetu_pipelines_tests.conftest import STORE_ASSETS, StoreEnv
from civicsetu_pipelines_tests.pdfgen import write_pdf

J = "GUJARAT"  # a partition of the shipped registry (partitions are fixed at import)
CIRCULAR = [
    "MIZORAM REAL ESTATE REGULATORY AUTHORITY",
    "CIRCULAR",
    "1. Every promoter shall display the registration number of the project at its site, as "
    "rule 5 requires, in letters legible from the road. GRAPHFAULT",
    "2. A promoter who does not shall be heard before any penalty is imposed on him.",
]
FAULTY = [
    "GOVERNMENT OF MIZORAM",
    "NOTIFICATION",
    "1. Every real estate agent shall renew the registration before it expires.",
    "2. The Authority shall publish the list of registered agents on its website.",
]


def _entry(env: StoreEnv, key: str, title: str, kind: str, day: str, path: Path) -> dict[str, Any]:
    return {
        "key": key, "title": title, "jurisdiction": J, "doc_type": kind, "effective_date": day,
        "source_url": f"https://example.gov.in/{path.name}", "filename": path.name,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "language": "eng",
        "status": "in_force",
    }  # fmt: skip


@pytest.fixture
def mizoram(store_env: StoreEnv) -> StoreEnv:
    rules = write_pdf(store_env.mirror / "rules.pdf", rules_pages())
    order = seam_doubled(write_pdf(store_env.mirror.parent / "go_plain.pdf", [GO]),
                         store_env.mirror / "go.pdf", "twenty")  # fmt: skip
    circular = write_pdf(store_env.mirror / "circular.pdf", [CIRCULAR])
    faulty = write_pdf(store_env.mirror / "faulty.pdf", [FAULTY])
    truncated = store_env.mirror / "truncated.pdf"
    truncated.write_bytes(rules.read_bytes()[: len(rules.read_bytes()) // 3])
    store_env.write_registry([
        _entry(store_env, "mz_rules", RULES_TITLE, "rules", "2018-06-01", rules),
        _entry(store_env, "mz_go_21", "G.O.Ms.No. 21 amending the Mizoram rules", "order",
               ORDER_DATE.isoformat(), order),
        _entry(store_env, "mz_circular", "Circular on display boards", "circular", "2019-03-01",
               circular),
        _entry(store_env, "mz_faulty", "Notification on agents", "notification", "2019-04-01",
               faulty),
        _entry(store_env, "mz_truncated", "A truncated download", "rules", "2019-05-01",
               truncated),
    ])  # fmt: skip
    return store_env


def seam_doubled(source: Path, out: Path, word: str) -> Path:
    """``source`` drawn as each line's left and right parts in two clipped strips overlapping
    at the middle of ``word`` (as some government orders are printed): the glyph at the seam is
    drawn in both, so a plain text read gives "twen nty"."""
    with pymupdf.open(source) as doc, pymupdf.open() as copy:
        for page in doc:
            (hit,) = page.search_for(word)[:1]
            seam = (hit.x0 + hit.x1) / 2
            new = copy.new_page(width=page.rect.width, height=page.rect.height)
            for clip in (
                pymupdf.Rect(0, 0, seam + 2, page.rect.height),
                pymupdf.Rect(seam - 2, 0, page.rect.width, page.rect.height),
            ):
                new.show_pdf_page(clip, doc, page.number, clip=clip)  # fmt: skip
        copy.save(out)
    with pymupdf.open(out) as doc:  # the defect is there to read
        assert word not in doc[0].get_text(), doc[0].get_text()
    return out


def _inject_faults(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipeline bug in three steps, each for one document: the structure decoder raises on
    mz_faulty, the reference reader on the circular's marked paragraph, the Akoma Ntoso writer
    on the circular."""
    from civicsetu_pipelines.graph import edges
    from civicsetu_pipelines.ingest import documents
    from civicsetu_pipelines.store import akn

    document_xml = akn.document_xml

    def broken_xml(doc: Any, *args: Any, **kwargs: Any) -> Any:
        if doc.key == "mz_circular":
            raise ValueError("an exporter bug")
        return document_xml(doc, *args, **kwargs)

    monkeypatch.setattr(akn, "document_xml", broken_xml)

    build_chunks, extract_references = documents.build_chunks, edges.extract_references

    def broken_build(pages: Any, **kwargs: Any) -> Any:
        if kwargs["document_key"] == "mz_faulty":
            raise RuntimeError("a decoder bug")
        return build_chunks(pages, **kwargs)

    def broken_references(text: str) -> Any:
        if "GRAPHFAULT" in text:
            raise KeyError("a reader bug")
        return extract_references(text)

    monkeypatch.setattr(documents, "build_chunks", broken_build)
    monkeypatch.setattr(edges, "extract_references", broken_references)


ASSETS = (*STORE_ASSETS, "document_catalog", "graph_edges", "akn_documents")


def _current(url: str) -> dict[str, int]:
    with connect(url) as conn:
        rows = conn.execute(
            "SELECT document_key, count(*) FROM legal_chunks WHERE jurisdiction = %s AND "
            "status = 'current' GROUP BY 1",
            (J,),
        ).fetchall()
    return {str(k): int(n) for k, n in rows}


def test_each_failure_stays_in_its_document_and_the_run_succeeds(
    mizoram: StoreEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = mizoram.run_assets(J, ASSETS)
    assert first.success
    checks = mizoram.checks(first)
    assert not checks[("parsed_pages", "all_documents_parsed")].passed  # the truncated file
    assert checks[("section_chunks", "documents_set_aside")].passed
    assert checks[("akn_documents", "documents_set_aside")].passed
    assert checks[("akn_documents", "akn_schema_valid")].passed
    applied = checks[("section_chunks", "amendments_applied")]
    assert applied.passed, applied.description
    served = _current(mizoram.database_url)
    assert {"mz_rules", "mz_go_21", "mz_circular", "mz_faulty"} <= set(served)
    assert "mz_truncated" not in served

    # The G.O.'s one unnumbered instruction changed sub-rule (2) of rule 3 from its date; its
    # framing (the "Read the following" list, the signature, "Copy to") is no instruction.
    with connect(mizoram.database_url) as conn:
        history = unit_history(conn, "mz_rules", "Rule 3(2)")
    texts = [(str(h["text"]), h["valid_from"], h["valid_to"]) for h in history]
    before = [t for t in texts if "ten rupees" in t[0]]
    after = [t for t in texts if "twenty rupees" in t[0]]
    assert before and after, texts
    assert before[0][2] == ORDER_DATE and after[0][1] == ORDER_DATE

    # The same documents again, with a bug in two steps for one document each.
    _inject_faults(monkeypatch)
    second = mizoram.run_assets(J, ASSETS)
    assert second.success
    checks = mizoram.checks(second)
    aside = checks[("section_chunks", "documents_set_aside")]
    assert not aside.passed
    named = aside.metadata["documents"].value
    assert list(named) == ["mz_faulty"], named
    assert named["mz_faulty"][0].startswith("structure: RuntimeError: a decoder bug"), named
    graph = checks[("graph_edges", "documents_set_aside")]
    assert not graph.passed
    assert "mz_circular" in graph.metadata["documents"].value
    assert "graph: KeyError" in graph.metadata["documents"].value["mz_circular"][0]
    # the Akoma Ntoso export: the circular set aside, named; the others written and valid
    exported = checks[("akn_documents", "documents_set_aside")]
    assert not exported.passed
    assert list(exported.metadata["documents"].value) == ["mz_circular"]
    assert "akn: ValueError: an exporter bug" in exported.metadata["documents"].value[
        "mz_circular"][0]  # fmt: skip
    assert checks[("akn_documents", "akn_schema_valid")].passed
    (akn,) = [m.materialization for m in second.get_asset_materialization_events()
              if m.asset_key.to_user_string() == "akn_documents"]  # fmt: skip
    assert akn.metadata["documents"].value == 3  # the rules, the G.O. and mz_faulty's old rows
    # nothing is lost: the set-aside document's previous rows stay served, the others load
    assert _current(mizoram.database_url) == served
    with connect(mizoram.database_url) as conn:
        stats = {r["key"]: r for r in read_stats(conn)}
        edges_of = dict(
            conn.execute(
                "SELECT source_document, count(*) FROM graph_edges WHERE jurisdiction = %s "
                "GROUP BY 1",
                (J,),
            ).fetchall()
        )
    assert stats["mz_faulty"]["ingest_status"] == "set_aside"
    assert "structure: RuntimeError: a decoder bug" in stats["mz_faulty"]["error"]
    assert stats["mz_circular"]["ingest_status"] == "set_aside"
    assert "graph: KeyError" in stats["mz_circular"]["error"]
    assert stats["mz_truncated"]["ingest_status"] == "failed"
    assert stats["mz_rules"]["ingest_status"] == "ok"
    assert "mz_circular" not in edges_of and edges_of.get("mz_rules", 0) > 0
    # `civicsetu documents list` says so too
    from typer.testing import CliRunner

    from civicsetu_pipelines.cli import app

    listed = CliRunner().invoke(app, ["documents", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    ingest = {d["key"]: (d["ingest"], d["error"]) for d in json.loads(listed.stdout)}
    assert ingest["mz_faulty"][0] == "set_aside" and "decoder bug" in ingest["mz_faulty"][1]
    assert ingest["mz_rules"] == ("ok", None)
