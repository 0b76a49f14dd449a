"""The ``graph_edges`` asset through Dagster on a generated Act: re-materializing yields the same
edges, and a reference removed from the document removes its edge (issue 4)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines_tests.conftest import STORE_ASSETS, StoreEnv
from civicsetu_pipelines_tests.pdfgen import Heading, Para, Section, write_gazette_pdf

FILLER = "The Authority shall maintain the records in the manner specified by regulations."


def act_items(*, cite_section_3: bool) -> list[Any]:
    citing = (
        "(1) Every promoter who applies for registration under section 3 shall pay the fee."
        if cite_section_3
        else "(1) Every promoter who applies for registration shall pay the fee."
    )
    return [
        Para("THE REAL ESTATE (REGULATION AND DEVELOPMENT) ACT, 2016", bold=True),
        Heading("CHAPTER I"),
        Heading("PRELIMINARY"),
        Section("1", "Short title.", [f"(1) {FILLER}", f"(2) {FILLER}"]),
        Section("2", "Definitions.", [f"(1) {FILLER}", f"(2) {FILLER}"]),
        Section("3", "Prior registration.", [f"(1) {FILLER}", f"(2) {FILLER}"]),
        Section("4", "Application.", [citing, "(2) The fee shall be as per sub-section (1)."]),
        Section("5", "Grant.", ["(1) On receipt of the application under sub-section (1) of "
                                "section 4, the Authority shall grant registration.",
                                f"(2) {FILLER}"]),
    ]  # fmt: skip


def write_act(env: StoreEnv, *, cite_section_3: bool) -> None:
    path = write_gazette_pdf(env.mirror / "act.pdf", act_items(cite_section_3=cite_section_3))
    env.write_registry(
        [
            {
                "key": "test_act",
                "title": "Test Act",
                "jurisdiction": "CENTRAL",
                "doc_type": "act",
                "effective_date": "2016-05-01",
                "source_url": "https://example.gov.in/act.pdf",
                "filename": "act.pdf",
                "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
                "language": "eng",
                "status": "in_force",
            }
        ]
    )


def edges(url: str) -> list[tuple[Any, ...]]:
    with connect(url) as conn:
        return conn.execute(
            "SELECT edge_type, source_label, target_label, evidence_phrase, evidence_start, "
            "basis FROM graph_edges WHERE jurisdiction = 'CENTRAL' ORDER BY 1, 2, 3, 4, 5"
        ).fetchall()


def test_rematerializing_gives_identical_edges_and_a_removed_reference_removes_its_edge(
    store_env: StoreEnv,
) -> None:
    write_act(store_env, cite_section_3=True)
    keys = [*STORE_ASSETS, "graph_edges"]
    first = store_env.run_assets("CENTRAL", keys)
    assert first.success
    before = edges(store_env.database_url)
    refs = {(e[1], e[2]) for e in before if e[0] == "REFERENCES"}
    # Short sections stay whole, so references resolve to the section (the finest unit).
    assert refs == {("Section 4", "Section 3"), ("Section 5", "Section 4")}
    assert {e[0] for e in before} == {"HAS_PART", "REFERENCES"}
    checks = StoreEnv.checks(first)
    assert checks[("graph_edges", "unresolved_references")].passed
    assert checks[("graph_edges", "missing_targets")].passed

    again = store_env.run_assets("CENTRAL", keys)
    assert again.success
    assert edges(store_env.database_url) == before

    write_act(store_env, cite_section_3=False)
    changed = store_env.run_assets("CENTRAL", keys)
    assert changed.success
    after = edges(store_env.database_url)
    refs_after = {(e[1], e[2]) for e in after if e[0] == "REFERENCES"}
    assert refs_after == {("Section 5", "Section 4")}
    # Nothing else moved: the structure edges are the same as before.
    assert [e for e in after if e[0] == "HAS_PART"] == [e for e in before if e[0] == "HAS_PART"]
