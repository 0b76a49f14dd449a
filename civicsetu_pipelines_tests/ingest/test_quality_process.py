"""The checks' validator in a process of its own (``civicsetu materialize`` starts it so that Great
Expectations imports on the other core): it answers as this process would, its errors come back
named, and it is never left behind."""

from __future__ import annotations

import os
import signal

import pandas as pd
import pytest

from civicsetu_pipelines.base.processes import process_alive
from civicsetu_pipelines.ingest import quality, quality_process
from civicsetu_pipelines.ingest.quality import CHUNKS, Rule, TableSchema


def _rows() -> pd.DataFrame:
    rows = [
        {"chunk_id": f"a:{n}", "document_key": "a", "label": f"Rule {n}", "number": str(n),
         "number_int": n, "text": f"{n}. The text of rule {n}.", "page_start": 1,
         "unread": "a column no rule reads"}
        for n in (1, 2, 3)
    ]  # fmt: skip
    rows[2]["chunk_id"] = "a:1"  # unique_ids fails
    rows[1]["number"] = "12345"  # number_format fails
    rows[0]["label"] = "Rulle 1"  # label_format fails
    return pd.DataFrame(rows)


def _plain(results: list[quality.RuleResult]) -> list[tuple[str, bool, int, list[object]]]:
    return sorted((r.rule.name, r.success, r.unexpected_count, r.examples) for r in results)


def test_the_validator_answers_every_validation_as_this_process_would_then_goes() -> None:
    frame = _rows()
    here = quality.validate(CHUNKS, frame)
    validator = quality_process.start_validator()
    try:
        assert quality_process.start_validator() is validator  # one per process
        there = quality.validate(CHUNKS, frame)  # routed to the validator
        assert _plain(there) == _plain(here)
        assert {name for name, ok, *_ in _plain(there) if not ok} == {
            "unique_ids", "number_format", "label_format"
        }  # fmt: skip
        # the set-aside of a document goes through it too, whole frame then each document
        kept = quality.set_aside_documents(CHUNKS, frame)
        assert list(kept.reasons) == ["a"] and kept.kept.empty
        # an error raised while validating comes back, named
        broken = TableSchema("broken", (Rule("odd", "text", "no_such_kind", "an unknown kind"),))
        with pytest.raises(quality_process.ValidatorError, match="broken.*unknown rule kind"):
            quality.validate(broken, frame)
        assert quality.validate(CHUNKS, frame)  # and it answers on
    finally:
        quality_process.stop_validator()
    assert not process_alive(validator.pid)
    assert not quality._ROUTE  # validation is this process's again


def test_a_validator_that_died_fails_the_check_that_asked_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    validator = quality_process.Validator()
    try:
        os.kill(validator.pid, signal.SIGKILL)
        with pytest.raises(quality_process.ValidatorError) as caught:
            validator.validate(CHUNKS, _rows())
        said = str(caught.value)
        assert f"pid {validator.pid}" in said and "section_chunks" in said
        assert "exit code -9" in said
        # a frame over the validator's size is validated where it is: the dead validator is not
        # asked (a second copy of a state's chunks would stay in it for the rest of the run)
        monkeypatch.setattr(quality_process, "IN_PROCESS_ROWS", 2)
        here = validator.validate(CHUNKS, _rows())
        assert _plain(here) == _plain(quality.validate_here(CHUNKS, _rows()))
    finally:
        validator.stop()
    assert not process_alive(validator.pid)
