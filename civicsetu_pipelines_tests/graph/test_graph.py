"""Graph edges from chunks, stored in Postgres, and neighbourhood queries (issue 4, part)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from civicsetu_pipelines.base.settings import DEFAULT_MIRROR
from civicsetu_pipelines.graph.edges import (
    build_edges,
    document_rows,
    graph_stats,
    neighbours,
    replace_edges,
)
from civicsetu_pipelines.graph.references import TITLE_CONFIDENCE, ActTitles, UnitIndex
from civicsetu_pipelines.ingest.documents import chunk_rows, page_records, parse_rows
from civicsetu_pipelines.ingest.registry import (
    CuratedDerivation,
    load_curated_derivations,
    load_registry,
)
from civicsetu_pipelines.store.database import connect


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
    return _build_with(chunks, [])


def _build_with(chunks: list[dict[str, Any]], curated: list[CuratedDerivation]):  # type: ignore[no-untyped-def]
    indexes = {
        "act": UnitIndex.from_chunks((c["label"], c["chunk_id"]) for c in ACT),
        "rules": UnitIndex.from_chunks((c["label"], c["chunk_id"]) for c in RULES),
    }
    return build_edges(chunks, doc_types={"act": "act", "rules": "rules"}, act_key="act",
                       indexes=indexes, curated=curated)  # fmt: skip


def test_a_section_the_act_lacks_is_the_section_of_the_enactment_its_unit_names() -> None:
    """Section 14B is no RERA section; the unit that cites it names the EPF Act: an
    EXTERNAL_REFERENCE to that Act's section 14B (basis "context", with a note), not an
    unresolved RERA reference. A missing section in a unit naming no other enactment stays
    unresolved, and a section the Act has stays the Act's."""
    cited = [
        chunk("rules", "r4", "Rule 4", "4. Fees.- Interest under the EPF Act is payable, and "
              "orders under Section 14B include it; see also section 13.", unit="rule"),
        chunk("rules", "r5", "Rule 5", "5. Penalty.- as provided in section 99.", unit="rule",
              ordinal=1),
    ]  # fmt: skip
    build = _build(ACT + cited)
    external = [e for e in build.edges if e.edge_type == "EXTERNAL_REFERENCE"
                and e.source_label == "Rule 4"]  # fmt: skip
    epf = "Employees' Provident Funds and Miscellaneous Provisions Act, 1952"
    assert [(e.target_label, e.basis) for e in external] == [
        (epf, "text"), (f"section 14B of {epf}", "context"),
    ]  # fmt: skip
    assert external[1].note and "no section 14B" in external[1].note
    assert external[1].evidence_phrase == "Section 14B"
    assert ("REFERENCES", "Rule 4", "Section 13") in {
        (e.edge_type, e.source_label, e.target_label) for e in build.edges
    }
    assert [u["reference"] for u in build.unresolved] == ["Section 99"]


def test_edges_of_each_type_with_evidence() -> None:
    build = _build(ACT + RULES)
    edges = {(e.edge_type, e.source_label, e.target_label) for e in build.edges}
    assert ("HAS_PART", "act", "Section 13") in edges
    assert ("HAS_PART", "Section 13", "Section 13(2)") in edges
    assert ("REFERENCES", "Section 18", "Section 13") in edges
    assert ("EXTERNAL_REFERENCE", "Section 18", "Indian Penal Code, 1860") in edges
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
        first = replace_edges(conn, "TEST", build.edges, document_rows(build))
        second = replace_edges(conn, "TEST", build.edges, document_rows(build))
        assert first == second == len(build.edges)
        every = graph_stats(conn)
        stats = {s["edge_type"]: s["edges"] for s in every["edges"] if s["jurisdiction"] == "TEST"}
        assert stats["DERIVED_FROM"] == 1
        (test,) = [j for j in every["jurisdictions"] if j["jurisdiction"] == "TEST"]
        assert test["internal_references"] == sum(build.internal.values())
        assert (test["unresolved"], test["rules"], test["rules_derived"]) == (0, 1, 1)
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
    build = build_edges(every, doc_types=doc_types, act_key="rera_act_2016", indexes=indexes,
                        curated=load_curated_derivations())  # fmt: skip
    derived: dict[tuple[str, str], list[Any]] = {}
    for e in build.edges:
        if e.edge_type == "DERIVED_FROM":
            derived.setdefault((e.source_document, e.source_label), []).append(e)
    (rule9,) = derived[("gujarat_general_rules_2017", "Rule 9")]
    # The corpus Act keeps section 13 whole: the finest existing unit is the section.
    assert (rule9.target_label, rule9.basis) == ("Section 13", "text")
    assert rule9.evidence_phrase == "sub-section (2) of section 13"
    (rule25,) = derived[("chandigarh_general_rules_2016", "Rule 25")]
    assert (rule25.target_label, rule25.basis) == ("Section 44", "text")
    # Read from the rule's opening, not from a later sub-rule: revocation is section 7.
    assert [e.target_label for e in derived[("gujarat_general_rules_2017", "Rule 8")]] == [
        "Section 7"
    ]
    assert {e.target_label for e in derived[("gujarat_general_rules_2017", "Rule 16")]} == {
        "Section 12", "Section 18", "Section 19"}  # fmt: skip
    # Rules naming no section take the curated table, with its note.
    (rule14,) = derived[("gujarat_general_rules_2017", "Rule 14")]
    assert (rule14.target_label, rule14.basis, rule14.confidence) == ("Section 10", "curated", 0.9)
    assert rule14.note and "books of account" in rule14.note
    # At least 90% of the rules of each general-rules document derive from an Act section.
    coverage = build.derivation_coverage()
    for key in ("gujarat_general_rules_2017", "chandigarh_general_rules_2016"):
        assert coverage[key]["share"] >= 0.9, coverage[key]
        assert set(coverage[key]["not_derived"]) <= {"Rule 1", "Rule 2"}, coverage[key]
    assert coverage["gujarat_general_rules_2017"]["rules"] == 20
    assert coverage["chandigarh_general_rules_2016"]["rules"] == 37
    assert build.curated_problems == []  # no curated entry is redundant or dangling
    # Act-internal references resolve at >= 95%; the IPC sections of section 53(5) are external.
    assert build.unresolved_rate("rera_act_2016") <= 0.05
    assert not any(m["target"] == "Section 193" for m in build.missing_targets())


def _curated(rule: str, sections: tuple[str, ...]) -> CuratedDerivation:
    return CuratedDerivation(document="rules", rule=rule, sections=sections,
                             note="a note long enough to explain the entry")  # fmt: skip


def test_curated_derivations_fill_only_rules_whose_text_names_no_section() -> None:
    rule3 = chunk("rules", "r3", "Rule 3", "3. Fees.- The fee shall be paid.", unit="rule",
                  ordinal=2)  # fmt: skip
    curated = [
        _curated("Rule 3", ("Section 13(2)", "Section 18(1)")),  # 18(1) -> finest: Section 18
        _curated("Rule 9", ("Section 18",)),  # redundant: rule 9 names section 13(2)
        _curated("Rule 40", ("Section 13",)),  # no such rule
    ]
    build = _build_with([*ACT, *RULES, rule3], curated)
    derived = [(e.source_label, e.target_label, e.basis) for e in build.edges
               if e.edge_type == "DERIVED_FROM"]  # fmt: skip
    assert ("Rule 9", "Section 13(2)", "text") in derived
    assert ("Rule 9", "Section 18", "curated") not in derived
    assert ("Rule 3", "Section 13(2)", "curated") in derived
    assert ("Rule 3", "Section 18", "curated") in derived
    problems = {(p["rule"], p["problem"].split(":")[0]) for p in build.curated_problems}
    assert problems == {("Rule 9", "redundant"), ("Rule 40", "no such rule in the document")}
    coverage = build.derivation_coverage()["rules"]
    assert (coverage["rules"], coverage["derived"], coverage["not_derived"]) == (2, 2, [])


def test_a_curated_section_that_does_not_exist_is_reported() -> None:
    rule3 = chunk("rules", "r3", "Rule 3", "3. Fees.- The fee shall be paid.", unit="rule",
                  ordinal=2)  # fmt: skip
    build = _build_with([*ACT, *RULES, rule3], [_curated("Rule 3", ("Section 99",))])
    assert build.curated_problems == [
        {"document": "rules", "rule": "Rule 3", "problem": "Section 99 is not in act"}
    ]
    assert build.derivation_coverage()["rules"]["not_derived"] == ["Rule 3"]


def test_missing_targets_are_grouped_per_target() -> None:
    forms = [
        chunk("rules", f"f{n}", f"Form {n}", f"FORM {n} [See sub-rule (1) of rule 36]",
              unit="form", ordinal=3 + i)
        for i, n in enumerate("BCD")
    ]  # fmt: skip
    build = _build_with([*ACT, *RULES, *forms], [])
    (missing,) = [m for m in build.missing_targets() if m["document"] == "rules"]
    assert (missing["target"], missing["citations"]) == ("Rule 36(1)", 3)
    assert missing["cited_in"] == ["Form B", "Form C", "Form D"]
    assert missing["phrase"] == "sub-rule (1) of rule 36"


def test_rules_derive_from_the_act_section_their_title_restates(
    corpus_chunks: dict[str, Any],
) -> None:
    """Without the curated table, the Chandigarh rules whose words name no Act section derive
    from the section their printed title restates; each such edge agrees with the table (its
    labels, written by a person from the Act's words), and a title shared by several sections
    ("Functioning of Appellate Tribunal") derives nothing rather than a guess."""
    act = corpus_chunks["rera_act_2016"]
    titles = ActTitles.from_units((c["section_label"], c["title"], c["chapter"]) for c in act)
    key = "chandigarh_general_rules_2016"
    indexes = {k: UnitIndex.from_chunks((c["label"], c["chunk_id"]) for c in corpus_chunks[k])
               for k in ("rera_act_2016", key)}  # fmt: skip
    build = build_edges(corpus_chunks[key], doc_types={key: "rules", "rera_act_2016": "act"},
                        act_key="rera_act_2016", indexes=indexes, act_titles=titles)  # fmt: skip
    by_title = {e.source_label: e for e in build.edges
                if e.edge_type == "DERIVED_FROM" and e.note and "title" in e.note}  # fmt: skip
    curated = {c.rule: {s.split("(")[0] for s in c.sections}
               for c in load_curated_derivations() if c.document == key}  # fmt: skip
    assert len(by_title) >= 12, sorted(by_title)
    for rule, edge in by_title.items():
        assert edge.target_label.split("(")[0] in curated[rule], (rule, edge.target_label)
        assert (edge.basis, edge.confidence) == ("text", TITLE_CONFIDENCE)
        assert edge.evidence_phrase  # the rule's title, quoted
    assert by_title["Rule 36"].target_label == "Section 77"  # Budget, accounts and audit
    assert "Rule 32" not in by_title  # Functioning of Appellate Tribunal: no clear section


# Every default jurisdiction as materialized: references to units the corpus should hold resolve
# (a section of another enactment, or a rule of a state whose rules the corpus lacks, is no
# missing RERA unit). Gujarat's forms cite rules 36 and 28 its gazettes lack: a genuine 2.2%.
MAX_UNRESOLVED = 0.025
UP_FORMS = (
    "4 of the UP Rules' 116 references (3.4%) cite Forms I and K, which this 44-page copy of the "
    "gazette does not hold (its forms run H, J, L; the Form D page is printed 'Page 6 of 56'); "
    "Forms D and N, whose underlined headings OCR loses, are named from the rules citing them "
    "(issue 27)"
)
DERIVED_SHARE = 0.9


@pytest.mark.parametrize(
    "jurisdiction",
    ["CENTRAL", "CHANDIGARH", "DAMAN_AND_DIU", "GUJARAT", "KARNATAKA", "MAHARASHTRA",
     pytest.param("UTTAR_PRADESH", marks=pytest.mark.xfail(strict=True, reason=UP_FORMS))],
)  # fmt: skip
def test_references_resolve_in_every_default_jurisdiction(
    corpus_store: Any, jurisdiction: str
) -> None:
    with connect(corpus_store.database_url) as conn:
        stats = {row["jurisdiction"]: row for row in graph_stats(conn)["jurisdictions"]}
    row = stats[jurisdiction]
    assert row["unresolved_rate"] <= MAX_UNRESOLVED, row


@pytest.mark.parametrize(
    "jurisdiction",
    ["CHANDIGARH", "DAMAN_AND_DIU", "GUJARAT", "KARNATAKA", "UTTAR_PRADESH"],
)  # fmt: skip
def test_rules_derive_from_the_act_in_every_default_jurisdiction(
    corpus_store: Any, jurisdiction: str
) -> None:
    """At least 90% of each jurisdiction's substantive rules are DERIVED_FROM an Act section,
    as `civicsetu graph stats` shows them."""
    with connect(corpus_store.database_url) as conn:
        stats = {row["jurisdiction"]: row for row in graph_stats(conn)["jurisdictions"]}
    row = stats[jurisdiction]
    assert row["substantive_rules"] > 0, row
    assert row["derived_share"] >= DERIVED_SHARE, row


def test_other_enactments_sections_are_external_in_the_judgment(corpus_store: Any) -> None:
    """The Bombay High Court judgment cites the EPF Act's section 14B and the Maharashtra
    Municipal Corporation Act's sections 263 and 254: external edges, none a RERA reference."""
    with connect(corpus_store.database_url) as conn:
        external = {
            row[0]
            for row in conn.execute(
                "SELECT target_label FROM graph_edges WHERE jurisdiction = %s "
                "AND edge_type = %s AND source_document = %s",
                ("MAHARASHTRA", "EXTERNAL_REFERENCE", "neelkamal_v_union_bombay_hc_2017"),
            ).fetchall()
        }
    assert "section 263 of Maharashtra Municipal Corporation Act, 1949" in external
    assert "section 254 of Maharashtra Municipal Corporation Act, 1949" in external
    assert any(label.startswith("section 14B of Employees' Provident") for label in external)


def test_forms_a_document_does_not_print_resolve_elsewhere_or_are_not_held() -> None:
    """Regulations that cite their forms but print none (the Bihar General Regulations, 2021
    as gazetted): a form the jurisdiction's rules print resolves there; any other is an
    EXTERNAL_REFERENCE "not printed with it", not an unresolved reference. A document that
    prints forms and lacks the one it cites keeps it unresolved, and visible."""
    regulations = [
        chunk("regs", "g3", "Regulation 3", "3. Registration.- The application shall be in "
              "Form 1 and the fee in Form A.", unit="regulation"),
    ]  # fmt: skip
    indexes = {
        "act": UnitIndex.from_chunks((c["label"], c["chunk_id"]) for c in ACT),
        "rules": UnitIndex.from_chunks((c["label"], c["chunk_id"]) for c in RULES),
        "regs": UnitIndex.from_chunks((c["label"], c["chunk_id"]) for c in regulations),
    }
    types = {"act": "act", "rules": "rules", "regs": "regulations"}
    alone = build_edges(regulations, doc_types=types, act_key="act", indexes=indexes)
    assert alone.unresolved == []
    external = sorted(e.target_label for e in alone.edges if e.edge_type == "EXTERNAL_REFERENCE")
    assert external == ["form 1 of regs (not printed with it; not in the corpus)",
                        "form a of regs (not printed with it; not in the corpus)"]  # fmt: skip
    beside = build_edges(RULES + regulations, doc_types=types, act_key="act", indexes=indexes)
    refs = {e.target_label: e for e in beside.edges
            if e.edge_type == "REFERENCES" and e.source_document == "regs"}  # fmt: skip
    assert refs["Form A"].target_document == "rules" and refs["Form A"].target_id == "fa"
    assert beside.unresolved == []  # Form 1: printed by none of them, its own, published apart
    printing = RULES + [chunk("rules", "r10", "Rule 10", "10. Forms.- See Form B.", unit="rule",
                              ordinal=2)]  # fmt: skip
    own = build_edges(printing, doc_types=types, act_key="act", indexes=indexes)
    assert [u["reference"] for u in own.unresolved] == ["Form B"]
