"""The chunk schema's Great Expectations validation: a defect sets aside its own document, and
a frame that passes is validated once for both the set-aside and the asset's checks."""

from __future__ import annotations

import pandas as pd

from civicsetu_pipelines.ingest import quality
from civicsetu_pipelines.ingest.quality import CHUNKS, set_aside_documents, validate


def _chunk(document: str, n: int, **overrides: object) -> dict[str, object]:
    row: dict[str, object] = {
        "chunk_id": f"{document}:{n}",
        "document_key": document,
        "label": f"Rule {n}",
        "number": str(n),
        "number_int": n,
        "text": f"{n}. The text of rule {n}.",
        "page_start": 1,
    }
    row.update(overrides)
    return row


def test_a_frame_that_passes_is_validated_once_and_its_results_are_the_checks(
    monkeypatch,
) -> None:
    frame = pd.DataFrame([_chunk("a", 1), _chunk("a", 2), _chunk("b", 1), _chunk("b", 2)])
    calls: list[int] = []

    def counted(schema, rows):  # the real validation, counted
        calls.append(len(rows))
        return validate(schema, rows)

    monkeypatch.setattr(quality, "validate", counted)
    kept, reasons, results = set_aside_documents(CHUNKS, frame)
    assert calls == [4]
    assert reasons == {} and kept is frame
    assert results is not None
    assert {r.rule.name for r in results} == {r.name for r in CHUNKS.rules}
    assert all(r.success for r in results)


def test_a_document_failing_a_blocking_rule_is_set_aside_and_the_rest_checked_again(
    monkeypatch,
) -> None:
    rows = [_chunk("a", 1), _chunk("a", 2), _chunk("b", 1), _chunk("b", 2)]
    rows[3]["chunk_id"] = "b:1"  # b's ids collide: unique_ids, blocking
    rows[1]["number"] = "12345"  # a's number fails number_format, which does not block
    kept, reasons, results = set_aside_documents(CHUNKS, pd.DataFrame(rows))
    assert list(reasons) == ["b"]
    assert "unique_ids" in reasons["b"][0]
    assert set(kept["document_key"]) == {"a"}
    assert results is None  # the kept rows are not the frame validated: their check validates
    failed = {r.rule.name for r in validate(CHUNKS, kept) if not r.success}
    assert failed == {"number_format"}


def test_a_failure_that_does_not_block_keeps_every_document_and_shows_in_the_checks() -> None:
    rows = [_chunk("a", 1), _chunk("a", 2, number="12345")]
    kept, reasons, results = set_aside_documents(CHUNKS, pd.DataFrame(rows))
    assert reasons == {} and len(kept) == 2
    assert results is not None
    assert {r.rule.name for r in results if not r.success} == {"number_format"}
