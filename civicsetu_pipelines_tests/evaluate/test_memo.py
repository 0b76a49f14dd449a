"""ScopedMemo: an answer is kept exactly while the jurisdictions it reads serve the same rows."""

from __future__ import annotations

from pathlib import Path

from civicsetu_pipelines.answer import DeterministicReranker, LinearReranker
from civicsetu_pipelines.evaluate import ScopedMemo, ranking_key

PRINTS = {"CENTRAL": "c1", "GUJARAT": "g1", "KARNATAKA": "k1"}


def _saved(path: Path, prints: dict[str, str], context: str = "ctx") -> ScopedMemo:
    memo = ScopedMemo(path, context, prints)
    for text, scope in (("refund in Gujarat", ["CENTRAL", "GUJARAT"]), ("refund", None)):
        assert memo.get(memo.key(text, scope, "r")) is None
        memo.put(memo.key(text, scope, "r"), {"answer": text})
    memo.save()
    return memo


def test_a_change_in_one_state_asks_again_only_what_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "memo.pkl"
    _saved(path, PRINTS)
    karnataka_changed = ScopedMemo(path, "ctx", {**PRINTS, "KARNATAKA": "k2"})
    scoped = karnataka_changed.key("refund in Gujarat", ["GUJARAT", "CENTRAL"], "r")
    assert karnataka_changed.get(scoped) == {"answer": "refund in Gujarat"}  # reads neither
    assert karnataka_changed.get(karnataka_changed.key("refund", None, "r")) is None  # reads all
    assert (karnataka_changed.hits, karnataka_changed.misses) == (1, 1)
    assert karnataka_changed.said() == "asked 1, reused 1"
    gujarat_changed = ScopedMemo(path, "ctx", {**PRINTS, "GUJARAT": "g2"})
    assert gujarat_changed.get(gujarat_changed.key("refund in Gujarat", ["CENTRAL", "GUJARAT"],
                                                   "r")) is None  # fmt: skip
    # a new state's first rows change what an unscoped question reads
    grown = ScopedMemo(path, "ctx", {**PRINTS, "BIHAR": "b1"})
    assert grown.get(grown.key("refund", None, "r")) is None
    assert grown.get(grown.key("refund in Gujarat", ["CENTRAL", "GUJARAT"], "r")) is not None


def test_other_ranking_or_context_asks_again_and_a_save_keeps_only_this_runs_entries(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memo.pkl"
    _saved(path, PRINTS)
    memo = ScopedMemo(path, "ctx", PRINTS)
    assert memo.get(memo.key("refund", None, "other ranking")) is None
    assert ScopedMemo(path, "new code", PRINTS).get(memo.key("refund", None, "r")) is None
    assert memo.get(memo.key("refund", None, "r")) is not None
    memo.save()  # "refund in Gujarat" was neither read nor written in this run: dropped
    again = ScopedMemo(path, "ctx", PRINTS)
    assert again.get(again.key("refund in Gujarat", ["CENTRAL", "GUJARAT"], "r")) is None
    assert again.get(again.key("refund", None, "r")) == {"answer": "refund"}


def test_an_unreadable_file_is_asked_again_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "memo.pkl"
    path.write_bytes(b"not a pickle")
    memo = ScopedMemo(path, "ctx", PRINTS)
    assert memo.get(memo.key("refund", None, "r")) is None
    memo.save()
    assert ScopedMemo(path, "ctx", PRINTS).get(memo.key("refund", None, "r")) is None


def test_rankers_with_one_version_but_other_weights_rank_differently() -> None:
    a = LinearReranker({"hand": 1.0}, 0.0, "v1")
    b = LinearReranker({"hand": 0.5}, 0.0, "v1")
    assert ranking_key(a) != ranking_key(b)
    assert ranking_key(a) == ranking_key(LinearReranker({"hand": 1.0}, 0.0, "v1"))
    assert ranking_key(DeterministicReranker()) == ranking_key(DeterministicReranker())
