"""What changed, recorded (issue 37): each load of a jurisdiction records the units it added,
changed (text sha256 before and after, the amending instrument if any) and ended, in its own
transaction; the provisions table records the values that moved, the evaluation the golden
questions whose governing citations changed; ``legal_chunks``' ``changes_explained`` check warns
on a changed text no instrument explains. On a real (embedded) Postgres, no model."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid
from typing import Any

import dagster as dg
import psycopg
import pytest

from civicsetu_pipelines.defs.assets.store import changes_explained_check
from civicsetu_pipelines.evaluate import EvalResult, record
from civicsetu_pipelines.provisions import Provision, replace_provisions
from civicsetu_pipelines.store import (
    load_partition,
    read_changes,
    retire_documents,
    row_sha256,
)
from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines_tests.store.test_store import doc_version, load, synthetic_chunks

J, KEY, NOTICE = "MIZORAM", "mizoram_rules_2018", "mizoram_amendment_2024"
LOADED, RELOADED = dt.date(2026, 1, 5), dt.date(2026, 2, 9)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _retext(chunk: dict[str, Any], text: str) -> dict[str, Any]:
    new = {**chunk, "text": text, "char_end": len(text)}
    new["row_sha256"] = row_sha256(new)
    return new


def _by_label(changes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(c["unit_label"]): c for c in changes}


def test_a_reload_records_the_units_added_changed_and_ended_and_warns_on_a_silent_change(
    store_db: str,
) -> None:
    """Rules 1-3 loaded; then a re-printed gazette: Rule 1 with other words (no instrument),
    Rule 2 the same, Rule 3 gone, Rule 4 new. The second run's changes name exactly those three,
    with Rule 1's text hashes, and the check warns about Rule 1 alone."""
    first = synthetic_chunks(KEY, J, 3)
    stats = load(store_db, J, [doc_version(KEY, "v1")], first, today=LOADED)
    assert sorted((c.kind, c.unit_label) for c in stats.changes) == [
        ("added", "Rule 1"), ("added", "Rule 2"), ("added", "Rule 3")]  # fmt: skip
    fourth = synthetic_chunks(KEY, J, 4)[3]
    reworded = first[0]["text"].replace("whole duration", "entire life")
    second = [_retext(first[0], reworded), first[1], fourth]
    run = f"run-{uuid.uuid4().hex}"
    with connect(store_db) as conn:
        stats = load_partition(conn, J, registry_keys=[KEY], documents=[doc_version(KEY, "v2")],
                               chunks=second, today=RELOADED, run_id=run)  # fmt: skip
        recorded = read_changes(conn, jurisdictions=[J], run_id=run)
        assert read_changes(conn, jurisdictions=["GUJARAT"]) == []
        everything = read_changes(conn, jurisdictions=[J], since=LOADED)
    assert len(recorded) == len(stats.changes) == 3
    changes = _by_label(recorded)
    assert set(changes) == {"Rule 1", "Rule 3", "Rule 4"}  # Rule 2 unchanged: not named
    assert changes["Rule 1"]["kind"] == "changed" and changes["Rule 1"]["instrument"] is None
    assert changes["Rule 1"]["old_sha256"] == _sha(first[0]["text"])
    assert changes["Rule 1"]["new_sha256"] == _sha(reworded)
    assert changes["Rule 3"]["kind"] == "ended" and changes["Rule 3"]["new_sha256"] is None
    assert changes["Rule 3"]["old_sha256"] == _sha(first[2]["text"])
    assert changes["Rule 4"]["kind"] == "added" and changes["Rule 4"]["old_sha256"] is None
    assert all(c["document_key"] == KEY and c["jurisdiction"] == J for c in recorded)
    assert [c["run_id"] for c in everything[:3]] == [run] * 3  # newest first: this run's
    assert len(everything) == 6  # and the first load's three additions
    check = changes_explained_check(stats.changes)
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert "mizoram_rules_2018 Rule 1" in str(check.description)
    assert check.metadata["unexplained"].value == 1
    # the document removed (`documents remove`): its units are recorded ended, in that run
    with connect(store_db) as conn:
        retire_documents(conn, J, keep=[], today=RELOADED, run_id="removed")
        retired = read_changes(conn, run_id="removed")
    assert sorted((c["kind"], c["unit_label"]) for c in retired) == [
        ("ended", "Rule 1"), ("ended", "Rule 2"), ("ended", "Rule 4")]  # fmt: skip


def test_an_amendment_change_names_its_instrument_and_a_failed_load_records_nothing(
    store_db: str,
) -> None:
    """A notice substitutes Rule 2's words from a past date: the new point in time (its own
    chunk id) is recorded as Rule 2 changed by the notice, which explains it (the check
    passes). A load that fails half-way records nothing."""
    first = synthetic_chunks(KEY, J, 2)
    load(store_db, J, [doc_version(KEY, "v1")], first, today=LOADED)
    ended = {**first[1], "in_force_to": dt.date(2026, 2, 1), "flags": [f"ended_by:{NOTICE}"]}
    ended["row_sha256"] = row_sha256(ended)
    amended = _retext(first[1], first[1]["text"].replace("whole", "entire"))
    amended.update(chunk_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{KEY}/1@{NOTICE}")),
                   in_force_from=dt.date(2026, 2, 1),
                   amendment={"by": NOTICE, "kind": "substitute_words", "page": 1,
                              "instruction": 'for the word "whole", the word "entire"',
                              "previous": first[1]["chunk_id"]})  # fmt: skip
    amended["row_sha256"] = row_sha256(amended)
    stats = load(store_db, J, [doc_version(KEY, "v1")], [first[0], ended, amended],
                 today=RELOADED)  # fmt: skip
    (change,) = stats.changes
    assert (change.kind, change.unit_label, change.instrument) == ("changed", "Rule 2", NOTICE)
    assert change.old_sha256 == _sha(first[1]["text"]) and change.new_sha256 == _sha(
        amended["text"]
    )
    assert change.detail["previous_chunk_id"] == first[1]["chunk_id"]
    assert changes_explained_check(stats.changes).passed
    with connect(store_db) as conn:
        before = len(read_changes(conn))
    broken = [_retext(first[0], "x"), {**amended, "label": None}]  # NOT NULL: the load fails
    with pytest.raises(psycopg.errors.NotNullViolation):
        load(store_db, J, [doc_version(KEY, "v3")], broken, today=RELOADED)
    with connect(store_db) as conn:
        assert len(read_changes(conn)) == before


def _provision(value: str, label: str = "Rule 7") -> Provision:
    return Provision(J, "refund_days", "found", value, None, "days", f"within {value}", KEY,
                     label, str(uuid.uuid4()), 1)  # fmt: skip


def test_provision_values_that_moved_are_recorded(store_db: str) -> None:
    with connect(store_db) as conn:
        replace_provisions(conn, J, [_provision("45 days")], run_id="p1")  # first: no move
        replace_provisions(conn, J, [_provision("45 days")], run_id="p2")  # same value
        replace_provisions(conn, J, [_provision("30 days", "Rule 7A")], run_id="p3")
        recorded = read_changes(conn, kinds=["provision"])
    assert [(c["run_id"], c["unit_label"]) for c in recorded] == [("p3", "Rule 7A")]
    assert recorded[0]["detail"]["old_value"] == "45 days"
    assert recorded[0]["detail"]["new_value"] == "30 days"
    assert recorded[0]["detail"]["old_label"] == "Rule 7"


def test_two_runs_of_one_jurisdiction_replace_its_provisions_one_after_the_other(
    store_db: str,
) -> None:
    """Two runs of one jurisdiction at once (each its own connection) replace its provisions
    in turn: no duplicate key, and the table holds one run's rows (the fresh-clone CI failure
    of test_two_materializations_of_one_jurisdiction_at_once)."""
    from concurrent.futures import ThreadPoolExecutor

    def replace_often(value: str) -> None:
        with connect(store_db) as conn:
            for _ in range(15):
                replace_provisions(conn, "CONCURRENT", [
                    Provision("CONCURRENT", matter, "found", value, None, "days", value, KEY,
                              "Rule 7", str(uuid.uuid4()), 1)
                    for matter in ("refund_days", "interest_rate", "agent_fee")
                ])  # fmt: skip

    with ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(replace_often, v) for v in ("30 days", "45 days")]:
            done.result()
    with connect(store_db) as conn:
        rows = conn.execute(
            "SELECT matter, value FROM state_provisions WHERE jurisdiction = 'CONCURRENT'"
        ).fetchall()
    assert len(rows) == 3 and len({value for _, value in rows}) == 1


def _question(qid: str, cited: list[dict[str, str]]) -> dict[str, Any]:
    return {"question_id": qid, "jurisdiction": J, "query_type": "fact_lookup", "split": "dev",
            "phrasing": "legal", "query": f"question {qid}?", "status": "answered",
            "expect_refusal": False, "refusal_correct": True, "latency_ms": 1.0,
            "retrieved": [c["unit"] for c in cited], "expected": [f"{J}:Rule 7", f"{J}:Rule 9"],
            "governing": [f"{J}:Rule 7"], "cited": cited}  # fmt: skip


def test_golden_questions_whose_governing_citations_changed_are_recorded(store_db: str) -> None:
    """Between two evaluation runs, q1's governing unit is cited at a new point in time (an
    amendment's chunk), q2 only cites another non-governing unit: q1 alone is recorded."""
    rule7, rule9 = (
        {"unit": f"{J}:Rule 7", "chunk_id": "a"},
        {"unit": f"{J}:Rule 9", "chunk_id": "c"},
    )
    amended7 = {"unit": f"{J}:Rule 7", "chunk_id": "b"}
    with connect(store_db) as conn:
        for rows in (
            [_question("q1", [rule7]), _question("q2", [rule7])],
            [_question("q1", [amended7]), _question("q2", [rule7, rule9])],
        ):
            record(conn, EvalResult(rows, {}, 5), scope="ALL", golden_file="golden.jsonl",
                   golden_sha="ab", source="cli")  # fmt: skip
        recorded = read_changes(conn, kinds=["citation"])
    assert [(c["detail"]["question_id"], c["unit_label"]) for c in recorded] == [
        ("q1", f"{J}:Rule 7")]  # fmt: skip
    assert recorded[0]["detail"]["before"] == [rule7]
    assert recorded[0]["detail"]["after"] == [amended7]


def test_the_changes_command_lists_them_newest_first(
    store_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``civicsetu changes``, in process: -j (any case), --kind, --since, --json and the table;
    a bad date or kind is refused with exit 2."""
    from typer.testing import CliRunner

    from civicsetu_pipelines.cli import app

    first = synthetic_chunks(KEY, J, 2)
    load(store_db, J, [doc_version(KEY, "v1")], first, today=LOADED)
    load(store_db, J, [doc_version(KEY, "v2")], [_retext(first[0], "Rule 1 reworded.")],
         today=RELOADED)  # fmt: skip
    monkeypatch.setenv("CIVICSETU_DATABASE_URL", store_db)
    runner = CliRunner()
    listed = runner.invoke(app, ["changes", "-j", "mizoram", "--kind", "changed", "--kind",
                                 "ended", "--json"])  # fmt: skip
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)["changes"]
    assert [(r["kind"], r["unit_label"]) for r in rows] == [("ended", "Rule 2"),
                                                            ("changed", "Rule 1")]  # fmt: skip
    assert rows[1]["new_sha256"] == _sha("Rule 1 reworded.") and rows[1]["instrument"] is None
    table = runner.invoke(app, ["changes", "--since", "2000-01-01"])
    assert table.exit_code == 0 and "Rule 1" in table.stdout and "added" in table.stdout
    future = runner.invoke(app, ["changes", "--since", "2999-01-01", "--json"])
    assert json.loads(future.stdout) == {"changes": []}
    assert runner.invoke(app, ["changes", "--since", "soon"]).exit_code == 2
    assert runner.invoke(app, ["changes", "--kind", "moved"]).exit_code == 2
