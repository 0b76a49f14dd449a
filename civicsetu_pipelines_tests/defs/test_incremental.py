"""Documents as the unit of incremental work (issue 46): a jurisdiction's run processes the
documents that are new, changed or removed (with their amendment family) and leaves the others
as they are served; what it serves then is what processing every document serves.

The real ingest job, whole (``served_documents`` records what each run served), on generated
PDFs and the embedded Postgres: rules, a notification amending them, and authority orders that
cite the rules and the Act.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest

from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines_tests.amending_documents import (
    AMENDMENT,
    AMENDMENT_TITLE,
    RULES_TITLE,
    rules_pages,
)
from civicsetu_pipelines_tests.conftest import StoreEnv
from civicsetu_pipelines_tests.pdfgen import write_pdf

J = "GUJARAT"  # a partition of the shipped registry (partitions are fixed at import)


def _order(n: int, days: int) -> list[list[str]]:
    return [[
        "REAL ESTATE REGULATORY AUTHORITY",
        f"Complaint No. {n} of 2024",
        "ORDER",
        f"1. The complainant {n} booked a flat in the project of the respondent promoter and "
        "paid the price in instalments.",
        "2. The promoter shall refund the amount with interest under section 18 of the Act at "
        "the rate fixed in rule 8.",
        f"3. The refund shall be paid within {days} days from the date of this order.",
    ]]  # fmt: skip


def _entry(key: str, title: str, kind: str, day: str, path: Path) -> dict[str, Any]:
    return {
        "key": key, "title": title, "jurisdiction": J, "doc_type": kind, "effective_date": day,
        "source_url": f"https://example.gov.in/{path.name}", "filename": path.name,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "language": "eng",
        "status": "in_force",
    }  # fmt: skip


class State:
    """The generated state: its files in the mirror and its registry, changed one document at a
    time."""

    def __init__(self, env: StoreEnv) -> None:
        self.env = env
        self.entries: dict[str, dict[str, Any]] = {}
        self.put("gj_rules", RULES_TITLE, "rules", "2018-06-01", rules_pages())
        self.put("gj_amendment", AMENDMENT_TITLE, "notification", "2024-04-01", [AMENDMENT])
        for n in (1, 2):
            self.put(f"gj_order_{n}", f"Order in Complaint No. {n} of 2024", "order",
                     "2024-06-01", _order(n, 30))  # fmt: skip

    def put(self, key: str, title: str, kind: str, day: str, pages: list[list[str]]) -> None:
        path = write_pdf(self.env.mirror / f"{key}.pdf", pages)
        self.entries[key] = _entry(key, title, kind, day, path)
        self.env.write_registry(list(self.entries.values()))

    def remove(self, key: str) -> None:
        del self.entries[key]
        self.env.write_registry(list(self.entries.values()))

    def run(self, *, every: bool = False) -> Any:
        """The whole ingest job for the state (``every``: ``materialize --force``)."""
        import dagster as dg

        from civicsetu_pipelines.defs import build_definitions
        from civicsetu_pipelines.defs.partitions import add_jurisdiction_partitions
        from civicsetu_pipelines.operate.runs import ingest_run_config

        job = build_definitions().resolve_job_def("ingest_job")
        with dg.DagsterInstance.ephemeral() as instance:
            add_jurisdiction_partitions(instance, [J])
            result = job.execute_in_process(
                partition_key=J, instance=instance, raise_on_error=False,
                run_config=ingest_run_config(every),
            )  # fmt: skip
        assert result.success
        # the store's error checks hold after every run (they read the documents it loaded)
        failed = [(c.asset_key.to_user_string(), c.check_name)
                  for c in result.get_asset_check_evaluations()
                  if not c.passed and c.asset_key.to_user_string() == "legal_chunks"
                  and c.severity.value == "ERROR"]  # fmt: skip
        assert not failed, failed
        return result

    def export(self) -> Any:
        """``graph_export`` of the state, as the UI or automation materializes it."""
        import dagster as dg

        from civicsetu_pipelines.defs import build_definitions
        from civicsetu_pipelines.defs.assets.graph import graph_export
        from civicsetu_pipelines.defs.partitions import add_jurisdiction_partitions

        with dg.DagsterInstance.ephemeral() as instance:
            add_jurisdiction_partitions(instance, [J])
            result = dg.materialize([graph_export], partition_key=J, instance=instance,
                                    resources=build_definitions().resources)  # fmt: skip
        assert result.success
        return result

    def served(self) -> dict[str, Any]:
        """What the store serves of the state: current units, edges, catalog, fingerprints."""
        queries = {
            "units": "SELECT document_key, chunk_id::text, row_sha256, content_sha256, "
            "amendment FROM legal_chunks WHERE jurisdiction = %s AND status = 'current' "
            "ORDER BY 1, 2, 3",
            "edges": "SELECT edge_type, source_document, source_id, target_document, target_id, "
            "evidence_start, evidence_phrase, basis, note FROM graph_edges WHERE jurisdiction "
            "= %s ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9",
            "graph_documents": "SELECT document_key, internal_references, unresolved, rules, "
            "rules_derived FROM graph_documents WHERE jurisdiction = %s ORDER BY 1",
            "catalog": "SELECT key, ingest_status, sha256, sections, chunks, coverage FROM "
            "documents WHERE jurisdiction = %s ORDER BY 1",
            "units_catalog": "SELECT u.document_key, u.label, u.ordinal FROM document_units u "
            "JOIN documents d ON d.key = u.document_key WHERE d.jurisdiction = %s ORDER BY 1, 3",
            "fingerprints": "SELECT document_key, fingerprint, targets FROM served_documents "
            "WHERE jurisdiction = %s ORDER BY 1",
        }
        with connect(self.env.database_url) as conn:
            return {name: conn.execute(sql, (J,)).fetchall() for name, sql in queries.items()}


def _meta(result: Any, asset: str) -> dict[str, Any]:
    return StoreEnv.metadata(result, asset)


def _processed(result: Any) -> dict[str, str]:
    """Document -> its state, for the documents the run processed (served_documents' table)."""
    table = str(_meta(result, "served_documents")["documents"]).splitlines()[2:]
    return {cells[1].strip(): cells[3].strip() for cells in (row.split("|") for row in table)}


@pytest.fixture
def state(store_env: StoreEnv) -> State:
    return State(store_env)


def test_a_run_processes_what_changed_and_serves_what_every_document_serves(
    state: State,
) -> None:
    first = state.run()
    assert _processed(first) == {k: "served" for k in state.entries}
    assert _meta(first, "graph_edges")["whole_graph"] is True
    cold = state.served()
    assert {row[0] for row in cold["fingerprints"]} == set(state.entries)
    # the notification is recorded with the rules it amends: its family
    assert ("gj_amendment", ["gj_rules"]) in [(r[0], r[2]) for r in cold["fingerprints"]]

    # Nothing changed: nothing processed, everything served as it was.
    again = state.run()
    assert _processed(again) == {}
    assert _meta(again, "raw_pdfs")["left_as_they_were"] == len(state.entries)
    assert _meta(again, "section_chunks")["chunks"] == 0
    assert state.served() == cold

    # One order added: it alone is parsed, chunked, embedded, loaded and linked; its "rule 8"
    # resolves into the rules as they are served, and the others' rows, edges and catalog rows
    # stay. The result is what a run over every document makes.
    state.put("gj_order_3", "Order in Complaint No. 3 of 2024", "order", "2024-07-01",
              _order(3, 45))  # fmt: skip
    added = state.run()
    assert _processed(added) == {"gj_order_3": "served"}
    assert _meta(added, "parsed_pages")["documents"] == 1
    assert _meta(added, "graph_edges")["whole_graph"] is False
    assert _meta(added, "document_catalog")["left_as_they_were"] == 4
    incremental = state.served()
    edges = [e for e in incremental["edges"] if e[1] == "gj_order_3" and e[3] == "gj_rules"]
    assert edges, "the new order's reference to rule 8 did not resolve into the served rules"
    # the picture of the network is the export's, off the ingest path, drawn from the graph as
    # served
    assert "network_png" not in _meta(added, "graph_edges")
    exported = _meta(state.export(), "graph_export")
    assert exported["edges"] == len(incremental["edges"])
    picture = Path(str(exported["network_png"]))
    assert picture.read_bytes().startswith(b"\x89PNG") and picture.name == f"{J}.png"
    inline = str(exported["network"]).split("base64,", 1)[1].rstrip(")")
    assert base64.b64decode(inline) == picture.read_bytes()
    assert state.run(every=True) and state.served() == incremental
    assert _processed(state.run()) == {}  # a forced run records what the next one compares

    # The amending notification changed: it brings the rules it amends (their points in time
    # are made again from it); the orders stay.
    state.put("gj_amendment", AMENDMENT_TITLE, "notification", "2024-05-01",
              [[*AMENDMENT[:5], "(2) They shall come into force on the 1st day of May, 2024.",
                *AMENDMENT[6:]]])  # fmt: skip
    changed = state.run()
    assert set(_processed(changed)) == {"gj_amendment", "gj_rules"}
    dated = [u for u in state.served()["units"] if u[0] == "gj_rules" and u[4]]
    assert dated and {u[4]["date"] for u in dated} == {"2024-05-01"}, dated

    # One order removed: its units retired, its edges and catalog row gone, no other processed.
    state.remove("gj_order_2")
    removed = state.run()
    assert _processed(removed) == {}
    assert _meta(removed, "raw_pdfs")["removed"] == ["gj_order_2"]
    after = state.served()
    for name in ("units", "edges", "catalog", "fingerprints"):
        assert not [row for row in after[name] if "gj_order_2" in row[:2]], name
    assert state.run(every=True) and state.served() == after

    # Removed between runs (`documents remove` retires its rows at once), then registered again
    # as it was: processed again, not left as it was (its rows are gone).
    from civicsetu_pipelines.store import retire_documents

    entry = state.entries["gj_order_1"]
    state.remove("gj_order_1")
    with connect(state.env.database_url) as conn:
        assert retire_documents(conn, J, keep=list(state.entries))
    state.entries["gj_order_1"] = entry
    state.env.write_registry(list(state.entries.values()))
    back = state.run()
    assert _processed(back) == {"gj_order_1": "served"}
    assert state.served() == after
