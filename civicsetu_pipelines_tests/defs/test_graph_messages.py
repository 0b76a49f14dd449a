"""``graph_edges``'s warnings about cited units that do not exist: one line per citing document,
the first few named with where and how often, the rest counted (the check's table lists all)."""

from __future__ import annotations

from civicsetu_pipelines.defs.assets.graph import MISSING_NAMED, missing_lines


def _item(document: str, target: str, n: int = 1) -> dict[str, object]:
    phrase = f"{target.lower()} of the Act"
    return {"document": document, "target": target, "citations": n,
            "cited_in": [f"{document}:Rule 3"], "phrase": phrase}  # fmt: skip


def test_one_line_per_document_naming_the_first_and_counting_the_rest() -> None:
    rules = [_item("ap_rules", f"Section {n}", n) for n in range(1, MISSING_NAMED + 4)]
    order = [_item("ap_order", "Rule 36(1)")]
    lines = missing_lines(rules + order)
    assert len(lines) == 2
    first, second = lines
    assert first.startswith(f"ap_rules: {MISSING_NAMED + 3} cited unit(s) do not exist: Section 1 ")
    assert f"Section {MISSING_NAMED} (cited {MISSING_NAMED}x in ap_rules:Rule 3" in first
    assert f"Section {MISSING_NAMED + 1} " not in first
    assert first.endswith("; and 3 more (the missing_targets check lists them)")
    assert second == ("ap_order: 1 cited unit(s) do not exist: Rule 36(1) (cited 1x in "
                      "ap_order:Rule 3 as 'rule 36(1) of the Act')")  # fmt: skip
    assert missing_lines([]) == []
