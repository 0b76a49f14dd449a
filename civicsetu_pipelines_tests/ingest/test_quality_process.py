"""The checks' validator in a process of its own (``civicsetu materialize`` starts it so that Great
Expectations imports on the other core): it answers as this process would, its errors come back
named, and it is never left behind. The one the commands of a state directory share answers
them one after another, idles out, is stopped by ``db stop``, and a dead one is named and
replaced."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from civicsetu_pipelines.base.processes import process_alive
from civicsetu_pipelines.ingest import quality, quality_process, quality_service
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


# -- the validator the commands of a state directory share ---------------------------------------


def _wait_gone(pid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not process_alive(pid)


def test_the_shared_validator_answers_one_command_after_another_then_idles_out(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    frame = _rows()
    here = _plain(quality.validate_here(CHUNKS, frame))
    first = quality_process.start_validator(run_dir, idle_s=3.0)
    try:
        assert isinstance(first, quality_process.SharedValidator)
        assert _plain(quality.validate(CHUNKS, frame)) == here
        broken = TableSchema("broken", (Rule("odd", "text", "no_such_kind", "an unknown kind"),))
        with pytest.raises(quality_process.ValidatorError, match="broken.*unknown rule kind"):
            quality.validate(broken, frame)
    finally:
        quality_process.stop_validator()
    assert process_alive(first.pid)  # left for the next command
    sock, pid_file, _ = quality_service.shared_paths(run_dir)
    assert sock.exists() and int(pid_file.read_text()) == first.pid
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600  # the user's own commands only
    # the next command (another process: its own connection) is answered by the same one
    again = subprocess.run(
        [sys.executable, "-c", "from civicsetu_pipelines_tests.ingest.test_quality_process "
         f"import ask_shared; ask_shared({str(run_dir)!r})"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [str(first.pid), repr(here)]
    # then, with no command for its idle time, it goes, and takes its socket and pid file
    assert _wait_gone(first.pid)
    assert not sock.exists() and not pid_file.exists()


def ask_shared(run_dir: str) -> None:
    """The second command of the test above, in a process of its own."""
    validator = quality_process.start_validator(Path(run_dir), idle_s=3.0)
    print(validator.pid)
    print(repr(_plain(quality.validate(CHUNKS, _rows()))))
    quality_process.stop_validator()


def test_documents_add_warms_it_and_db_stop_stops_it(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    quality_service.warm_shared_validator(run_dir, idle_s=0)  # 0: no shared validator
    assert not run_dir.exists() or not list(run_dir.glob("validator-*"))
    quality_service.warm_shared_validator(run_dir, idle_s=60)
    sock, pid_file, log = quality_service.shared_paths(run_dir)
    deadline = time.monotonic() + 30
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(pid_file.read_text())
    quality_service.warm_shared_validator(run_dir, idle_s=60)  # one listens: none more
    assert [p.name for p in run_dir.glob("validator-*.pid")] == [pid_file.name]
    assert quality_service.stop_shared_validators(run_dir) == [pid]
    assert _wait_gone(pid, 1.0)
    assert not sock.exists() and not pid_file.exists()
    assert quality_service.stop_shared_validators(run_dir) == []  # idempotent


def test_a_shared_validator_killed_fails_the_check_naming_it_and_the_next_starts_anew(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    validator = quality_process.start_validator(run_dir, idle_s=60.0)
    try:
        assert quality.validate(CHUNKS, _rows())
        os.kill(validator.pid, signal.SIGKILL)
        with pytest.raises(quality_process.ValidatorError) as caught:
            quality.validate(CHUNKS, _rows())
        said = str(caught.value)
        assert f"pid {validator.pid}" in said and "section_chunks" in said and "gone" in said
    finally:
        quality_process.stop_validator()
    sock, _, _ = quality_service.shared_paths(run_dir)
    assert sock.exists()  # left behind by the killed one: nothing listens on it
    fresh = quality_process.start_validator(run_dir, idle_s=60.0)  # listening, importing
    try:
        assert fresh.pid != validator.pid and process_alive(fresh.pid)
    finally:
        quality_process.stop_validator()
        assert quality_service.stop_shared_validators(run_dir) == [fresh.pid]
    assert _wait_gone(fresh.pid, 1.0)


def test_a_state_deeper_than_a_socket_path_allows_has_its_validator_listen_elsewhere(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / ("a-state-directory-deeper-than-a-unix-socket-path-allows-" * 2) / "run"
    sock, pid_file, _ = quality_service.shared_paths(run_dir)
    assert sock.parent.name == f"civicsetu-{os.getuid()}" and pid_file.parent == run_dir
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    validator = quality_process.start_validator(run_dir, idle_s=60.0)
    try:
        assert isinstance(validator, quality_process.SharedValidator)
        assert sock.exists() and int(pid_file.read_text()) == validator.pid
    finally:
        quality_process.stop_validator()
        assert quality_service.stop_shared_validators(run_dir) == [validator.pid]
    assert not sock.exists() and not pid_file.exists()


def test_a_shared_validator_that_cannot_start_leaves_the_command_one_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    run_dir = tmp_path / "run"
    # the validator's process exits at once (its module cannot be found): named, then a child
    monkeypatch.setattr(quality_service, "VALIDATOR_MODULE", "civicsetu_pipelines.no_such_module")
    quality_service.warm_shared_validator(run_dir, idle_s=60.0)  # started, not waited for
    validator = quality_process.start_validator(run_dir, idle_s=60.0)
    try:
        assert not isinstance(validator, quality_process.SharedValidator)
        assert "the shared checks' validator is not available" in caplog.text
        assert "did not listen" in caplog.text and "No module named" in caplog.text
        assert _plain(quality.validate(CHUNKS, _rows())) == _plain(
            quality.validate_here(CHUNKS, _rows())
        )
    finally:
        quality_process.stop_validator()
    assert not process_alive(validator.pid)
