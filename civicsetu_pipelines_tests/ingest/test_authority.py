"""The order of legal force (data/kinds.yaml, ``authority``): every kind in one tier, forms
last whatever their document, and a broken table refused naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from civicsetu_pipelines.ingest.kinds import (
    KINDS_YAML,
    authority_of,
    authority_tiers,
    citation_role,
    kinds_asked_for,
    load_kinds,
)


def test_the_act_leads_then_rules_regulations_orders_case_law_faq_forms() -> None:
    order = ["act", "rules", "regulations", "order", "judgment", "faq"]
    tiers = [authority_of(kind, "x").tier for kind in order]
    assert tiers == sorted(tiers) and len(set(tiers)) == len(tiers)
    assert authority_of("notification", "paragraph") == authority_of("order", "paragraph")
    # a form, annexure or model agreement ranks last whatever its document's kind
    assert authority_of("rules", "form").name == "form"
    assert authority_of("rules", "form").strength == 0.0
    assert authority_of("act", "section").strength == 1.0
    assert authority_of("no-such-kind", "rule").name == "form"  # unknown: weakest, never first
    assert set(authority_tiers()) == set(load_kinds()) | {"form"}


def test_citation_roles() -> None:
    assert citation_role("act", "section") == "law"
    assert citation_role("rules", "rule") == "law"
    assert citation_role("faq", "question") == "guidance"
    assert citation_role("judgment", "paragraph") == "case law"
    assert citation_role("rules", "form") == "form"


@pytest.mark.parametrize(
    ("authority", "message"),
    [
        ("[[act], [act]]", "'act' is in two tiers"),
        ("[[act]]", "no tier for"),
        (
            "[[act, rules, regulations, faq, order, notification, circular, judgment, form], "
            "[memo]]",
            "memo is not a kind",
        ),
    ],
)
def test_a_broken_authority_table_is_refused(tmp_path: Path, authority: str, message: str) -> None:
    text = KINDS_YAML.read_text("utf-8")
    head, kinds = text.split("\nkinds:\n", 1)
    broken = tmp_path / "kinds.yaml"
    broken.write_text(f"schema_version: 1\nauthority: {authority}\nkinds:\n{kinds}", "utf-8")
    with pytest.raises(ValueError, match=message):
        authority_tiers.__wrapped__(broken)


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        (
            "Under Karnataka's draft model agreement for sale, how long is the builder liable?",
            {"form"},
        ),
        ("What did the Karnataka RERA penalty order of 1 December 2017 impose?", {"order"}),
        ("What does the FAQ say about carpet area?", {"faq"}),
        ("What did the Bombay High Court hold on retrospective effect?", {"judgment"}),
        ("Can a promoter take an advance without an agreement for sale?", set()),
        ("What punishment for not obeying an order of the Appellate Tribunal?", set()),
    ],
)
def test_a_question_that_names_a_kind_of_document_ranks_it_first(
    question: str, asked: set[str]
) -> None:
    found = kinds_asked_for(question)
    assert found == asked
    if "form" in found:
        assert authority_of("rules", "form", found).tier == 1
        assert authority_of("act", "section", found).tier == 1  # the Act is not demoted
