"""Graph edges from chunks, stored in Postgres, and neighbourhood queries (issue 4, part)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from civicsetu_pipelines.config import DEFAULT_MIRROR
from civicsetu_pipelines.database import connect
from civicsetu_pipelines.graph import build_edges, graph_stats, neighbours, replace_edges
from civicsetu_pipelines.ingest import chunk_rows, page_records, parse_rows
from civicsetu_pipelines.references import UnitIndex
from civicsetu_pipelines.registry import load_registry


def chunk(
    doc: str, cid: str, label: str, text: str, *, unit: str, parent: str | None = None,
    ordinal: int = 0,
) -> dict[str, Any]:  # fmt: skip
    section = label.split("(")[0]
    return {"document_key": doc, "chunk_id": cid, "label": label, "section_label": section,
            "text": text, "unit": unit, "parent_id": parent, "ordinal": ordinal}  # fmt: skip


ACT = [
    chunk(
        "act", "a13", "Section 13", "13. (1) A promoter shall not accept a sum ...", unit="section"
    ),
    chunk(
        "act",
        "a13-2",
        "Section 13(2)",
        "(2) The agreement for sale referred to in "
        "sub-section (1) shall be in such form as may be prescribed.",
        unit="section",
        parent="a13",
        ordinal=1,
    ),  # fmt: skip
    chunk(
        "act",
        "a18",
        "Section 18",
        "18. If the promoter fails to comply with section 13, the Indian Penal Code applies.",
        unit="section",
        ordinal=2,
    ),  # fmt: skip
]
RULES = [
    chunk(
        "rules",
        "r9",
        "Rule 9",
        "9. Agreement for sale.- For the purpose of sub-section (2) "
        "of section 13, the agreement shall be as per Form 'A'.",
        unit="rule",
    ),  # fmt: skip
    chunk("rules", "fa", "Form A", "FORM 'A' [See rule 9]", unit="form", ordinal=1),
]


def _build(chunks: list[dict[str, Any]]):  # type: ignore[no-untyped-def]
    indexes = {
        "act": UnitIndex.from_chunks((c["label"], c["chunk_id"]) for c in ACT),
        "rules": UnitIndex.from_chunks((c["label"], c["chunk_id"]) for c in RULES),
    }
    return build_edges(chunks, doc_types={"act": "act", "rules": "rules"}, act_key="act",
                       indexes=indexes)  # fmt: skip


def test_edges_of_each_type_with_evidence() -> None:
    build = _build(ACT + RULES)
    edges = {(e.edge_type, e.source_label, e.target_label) for e in build.edges}
    assert ("HAS_PART", "act", "Section 13") in edges
    assert ("HAS_PART", "Section 13", "Section 13(2)") in edges
    assert ("REFERENCES", "Section 18", "Section 13") in edges
    assert ("EXTERNAL_REFERENCE", "Section 18", "Indian Penal Code") in edges
    assert ("REFERENCES", "Rule 9", "Section 13(2)") in edges  # the Act's, not a rule 13
    assert ("REFERENCES", "Rule 9", "Form A") in edges
    assert ("DERIVED_FROM", "Rule 9", "Section 13(2)") in edges
    (derived,) = [e for e in build.edges if e.edge_type == "DERIVED_FROM"]
    text = RULES[0]["text"]
    assert text[derived.evidence_start : derived.evidence_end] == derived.evidence_phrase
    assert derived.evidence_phrase == "sub-section (2) of section 13"
    assert build.unresolved == []


def test_unresolved_references_are_listed_with_evidence() -> None:
    extra = chunk("rules", "r10", "Rule 10", "10. Fees.- As in rule 99.", unit="rule", ordinal=2)
    build = _build(RULES + [extra])
    assert build.unresolved == [
        {
            "document": "rules",
            "chunk": "r10",
            "label": "Rule 10",
            "reference": "Rule 99",
            "phrase": "rule 99",
        }  # fmt: skip
    ]
    assert build.unresolved_rate("rules") == pytest.approx(1 / 4)


def test_replace_is_idempotent_and_neighbours_walk_two_steps(pg_url: str) -> None:
    build = _build(ACT + RULES)
    with connect(pg_url) as conn:
        first = replace_edges(conn, "TEST", build.edges)
        second = replace_edges(conn, "TEST", build.edges)
        assert first == second == len(build.edges)
        stats = {
            s["edge_type"]: s["edges"] for s in graph_stats(conn) if s["jurisdiction"] == "TEST"
        }
        assert stats["DERIVED_FROM"] == 1
        near = neighbours(conn, "r9", types=("REFERENCES", "DERIVED_FROM"), direction="out")
        assert {(n["target_label"], n["depth"]) for n in near} == {
            ("Section 13(2)", 1), ("Form A", 1)
        }  # fmt: skip
        inbound = neighbours(conn, "a13", types=("REFERENCES", "HAS_PART"), direction="in",
                             depth=2)  # fmt: skip
        assert ("Section 18", 1) in {(n["source_label"], n["depth"]) for n in inbound}
        # A reference removed from a document removes its edge on the next replace.
        replace_edges(conn, "TEST", [e for e in build.edges if e.source_label != "Section 18"])
        near = neighbours(conn, "a13", types=("REFERENCES",), direction="in")
        assert near == []
        replace_edges(conn, "TEST", [])


@pytest.fixture(scope="module")
def corpus_chunks() -> dict[str, list[dict[str, Any]]]:
    if not DEFAULT_MIRROR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing at {DEFAULT_MIRROR} (CI must have ../shared)")
        pytest.skip(f"corpus missing at {DEFAULT_MIRROR}")
    registry = load_registry(include_seed=False)
    out = {}
    for key in ("rera_act_2016", "gujarat_general_rules_2017", "chandigarh_general_rules_2016"):
        spec = registry.get(key)
        pages = page_records(parse_rows(spec, Path(DEFAULT_MIRROR) / str(spec.filename)))
        out[key] = chunk_rows(spec, pages)[0]
    return out


def test_corpus_derivations_and_act_resolution(corpus_chunks: dict[str, Any]) -> None:
    indexes = {
        key: UnitIndex.from_chunks((c["label"], c["chunk_id"]) for c in chunks)
        for key, chunks in corpus_chunks.items()
    }
    doc_types = {"rera_act_2016": "act", "gujarat_general_rules_2017": "rules",
                 "chandigarh_general_rules_2016": "rules"}  # fmt: skip
    every = [c for chunks in corpus_chunks.values() for c in chunks]
    build = build_edges(every, doc_types=doc_types, act_key="rera_act_2016", indexes=indexes)
    derived = {
        (e.source_document, e.source_label): e.target_label
        for e in build.edges
        if e.edge_type == "DERIVED_FROM"
    }
    assert derived[("gujarat_general_rules_2017", "Rule 9")].startswith("Section 13")
    assert derived[("chandigarh_general_rules_2016", "Rule 25")].startswith("Section 44")
    # Act-internal references resolve at >= 95%.
    assert build.unresolved_rate("rera_act_2016") <= 0.05
