"""The gazette change sensor and the weekly re-ingestion schedules, on real files in tmp_path."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import httpx
import pymupdf
import pytest
import yaml

from civicsetu_pipelines.base.settings import DEFAULT_MIRROR
from civicsetu_pipelines.defs.jobs import build_ingest_job
from civicsetu_pipelines.defs.partitions import add_jurisdiction_partitions
from civicsetu_pipelines.defs.schedules import (
    DEFAULT_REINGEST_CRON,
    ENV_REINGEST_CRON,
    REINGEST_TIMEZONE,
    build_reingest_schedules,
)
from civicsetu_pipelines.defs.sensors import CHANGED_TAG, SENSOR_NAME, build_gazette_sensor
from civicsetu_pipelines.ingest.registry import load_registry
from civicsetu_pipelines.operate import gazette_watch
from civicsetu_pipelines.operate.gazette_watch import WatchState

JURISDICTIONS = load_registry(include_seed=False).jurisdictions()
# Two small real gazettes (CENTRAL, GUJARAT); a generated PDF stands in when the corpus is absent.
REAL_PDFS = {
    "act.pdf": "rera_act_2016.pdf",
    "gujarat.pdf": "gujrera_appellate_tribunal_rules_2016.pdf",
}


def _entry(key: str, jurisdiction: str, filename: str, **extra: Any) -> dict[str, Any]:
    return {
        "key": key,
        "title": f"Test document {key}",
        "jurisdiction": jurisdiction,
        "doc_type": "rules",
        "effective_date": "2017-01-01",
        "source_url": f"https://example.org/{filename}",
        "filename": filename,
        "language": "eng",
        **extra,
    }


def _make_pdf(path: Path, text: str) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), text)
    doc.save(path)
    doc.close()


@pytest.fixture(autouse=True)
def _no_instance_left_current() -> Iterator[None]:
    """The tests that evaluate schedules and sensors as the daemon does use a persistent test
    instance (``dg.instance_for_test``); Dagster enters it again inside, and its defs-state
    storage can stay the current one after it is disposed, breaking later tests' definitions
    loads in this worker. Put back whatever was current before."""
    from dagster._core.storage.defs_state.base import _current_storage

    before = _current_storage.get()
    yield
    _current_storage.set(before)


@dataclass(frozen=True)
class Tick:
    """One evaluation: the run requests, the new cursor (None: unchanged), the skip message and
    the partitions it adds."""

    run_requests: list[dg.RunRequest]
    cursor: str | None
    skip_message: str | None
    dynamic_partitions_requests: list[Any] = field(default_factory=list)


class Watch:
    """A mirror directory and a registry YAML in tmp_path, and the sensor watching them."""

    def __init__(self, root: Path) -> None:
        self.mirror = root / "mirror"
        self.drop = root / "drop"
        self.mirror.mkdir()
        self.drop.mkdir()
        self.registry = root / "registry.yaml"
        self.entries = [
            _entry("central_act", "CENTRAL", "act.pdf"),
            _entry("gujarat_rules", "GUJARAT", "gujarat.pdf", page_ranges=[[1, 3]]),
            _entry("karnataka_rules", "KARNATAKA", "karnataka.pdf"),
        ]
        self.write_registry()
        for name, real in REAL_PDFS.items():
            source = DEFAULT_MIRROR / real
            if source.is_file():
                shutil.copyfile(source, self.mirror / name)
            else:
                _make_pdf(self.mirror / name, f"stand-in for {real}")
        self.instance = dg.DagsterInstance.ephemeral()
        self.sensor = self.build()

    def build(self, **kwargs: Any) -> dg.SensorDefinition:
        kwargs.setdefault("partition_keys", JURISDICTIONS)
        return build_gazette_sensor(
            build_ingest_job(neo4j_enabled=False),
            mirror_dirs=[self.mirror, self.drop],
            registry_files=[self.registry],
            **kwargs,
        )

    def write_registry(self, header: str = "") -> None:
        body = yaml.safe_dump({"schema_version": 1, "documents": self.entries}, sort_keys=False)
        self.registry.write_text(header + body)

    def tick(self, cursor: str | None, sensor: dg.SensorDefinition | None = None) -> Tick:
        """Evaluate the sensor function (the daemon's path is in the Definitions test)."""
        context = dg.build_sensor_context(cursor=cursor, instance=self.instance)
        result = (sensor or self.sensor)(context)
        if isinstance(result, dg.SkipReason):
            return Tick([], None, result.skip_message)
        assert isinstance(result, dg.SensorResult)
        skip = result.skip_reason.skip_message if result.skip_reason else None
        added = list(result.dynamic_partitions_requests or [])
        return Tick(list(result.run_requests or []), result.cursor, skip, added)

    def baseline(self) -> str:
        data = self.tick(None)
        assert data.cursor
        return data.cursor


@pytest.fixture
def watch(tmp_path: Path) -> Iterator[Watch]:
    w = Watch(tmp_path)
    yield w
    w.instance.dispose()


def _requests(data: Tick) -> dict[str, dg.RunRequest]:
    out = {request.partition_key: request for request in data.run_requests}
    assert len(out) == len(data.run_requests), "one request per partition"
    return {key: request for key, request in out.items() if key is not None}


def _append(path: Path, data: bytes = b"\n% incremental update\n") -> None:
    with path.open("ab") as fh:
        fh.write(data)


# ------------------------------------------------------------------------------ the sensor


def test_first_tick_records_a_baseline_and_requests_nothing(watch: Watch) -> None:
    data = watch.tick(None)
    assert not data.run_requests
    assert "baseline" in (data.skip_message or "")
    state = WatchState.loads(data.cursor)
    assert state is not None
    assert set(state.snapshot) >= {
        "pdf:central_act", "pdf:gujarat_rules", "spec:central_act", "spec:gujarat_rules",
        "spec:karnataka_rules", f"registry:{watch.registry}",
    }  # fmt: skip
    assert "pdf:karnataka_rules" not in state.snapshot  # not mirrored yet
    assert state.snapshot["pdf:central_act"] == gazette_watch.file_sha256(watch.mirror / "act.pdf")


def test_unchanged_mirror_requests_nothing(watch: Watch) -> None:
    cursor = watch.baseline()
    data = watch.tick(cursor)
    assert not data.run_requests
    assert "No change" in (data.skip_message or "")


def test_changed_pdf_requests_only_its_jurisdiction_once(watch: Watch) -> None:
    cursor = watch.baseline()
    _append(watch.mirror / "act.pdf")
    data = watch.tick(cursor)
    requests = _requests(data)
    assert list(requests) == ["CENTRAL"]
    request = requests["CENTRAL"]
    assert request.run_key and request.run_key.startswith("gazette:CENTRAL:")
    assert request.tags[CHANGED_TAG] == "central_act"
    assert request.tags["civicsetu/trigger"] == SENSOR_NAME
    # The new cursor knows the change: evaluating again requests nothing.
    again = watch.tick(data.cursor)
    assert not again.run_requests


def test_new_file_for_another_jurisdiction_requests_only_that_partition(watch: Watch) -> None:
    cursor = watch.baseline()
    _make_pdf(watch.drop / "karnataka.pdf", "Karnataka rules")  # found in the second dir
    requests = _requests(watch.tick(cursor))
    assert list(requests) == ["KARNATAKA"]
    assert requests["KARNATAKA"].tags[CHANGED_TAG] == "karnataka_rules"


def test_removed_file_requests_its_jurisdiction(watch: Watch) -> None:
    cursor = watch.baseline()
    (watch.mirror / "gujarat.pdf").unlink()
    assert list(_requests(watch.tick(cursor))) == ["GUJARAT"]


def test_registry_edit_of_one_document_requests_only_its_jurisdiction(watch: Watch) -> None:
    cursor = watch.baseline()
    watch.entries[1]["page_ranges"] = [[1, 2]]
    watch.write_registry()
    requests = _requests(watch.tick(cursor))
    assert list(requests) == ["GUJARAT"]
    assert requests["GUJARAT"].tags[CHANGED_TAG] == "gujarat_rules"


def test_registry_edit_that_changes_no_document_requests_nothing(watch: Watch) -> None:
    cursor = watch.baseline()
    watch.write_registry(header="# a comment only\n")
    data = watch.tick(cursor)
    assert not data.run_requests
    assert data.cursor != cursor  # the registry file's new hash is remembered
    assert not watch.tick(data.cursor).run_requests


def test_document_removed_from_the_registry_requests_its_old_jurisdiction(watch: Watch) -> None:
    cursor = watch.baseline()
    del watch.entries[1]
    watch.write_registry()
    requests = _requests(watch.tick(cursor))
    assert list(requests) == ["GUJARAT"]
    assert requests["GUJARAT"].tags[CHANGED_TAG] == "gujarat_rules"


def test_identical_changes_give_the_identical_run_key(watch: Watch) -> None:
    cursor = watch.baseline()
    _append(watch.mirror / "act.pdf")
    first = _requests(watch.tick(cursor))["CENTRAL"]
    # A retried tick (same cursor, same files) and a fresh sensor object ask for the same key.
    assert _requests(watch.tick(cursor))["CENTRAL"].run_key == first.run_key
    assert _requests(watch.tick(cursor, watch.build()))["CENTRAL"].run_key == first.run_key


def test_a_later_repeat_of_the_same_change_gets_a_new_run_key(watch: Watch) -> None:
    path = watch.mirror / "act.pdf"
    original = path.read_bytes()
    cursor = watch.baseline()
    _append(path)
    to_b = watch.tick(cursor)
    path.write_bytes(original)
    back_to_a = watch.tick(to_b.cursor)
    _append(path)
    to_b_again = watch.tick(back_to_a.cursor)
    keys = [_requests(d)["CENTRAL"].run_key for d in (to_b, back_to_a, to_b_again)]
    assert len(set(keys)) == 3  # Dagster would otherwise skip the third run as a duplicate


def test_broken_registry_gives_a_skip_reason_and_keeps_the_cursor(watch: Watch) -> None:
    cursor = watch.baseline()
    watch.registry.write_text("schema_version: 1\ndocuments:\n  - key: [unclosed\n")
    data = watch.tick(cursor)
    assert not data.run_requests
    assert data.cursor is None  # None: Dagster keeps the stored cursor
    assert "registry cannot be loaded" in (data.skip_message or "")
    assert str(watch.registry) in (data.skip_message or "")

    watch.entries[0]["jurisdiction"] = "ATLANTIS"
    watch.write_registry()
    assert "registry cannot be loaded" in (watch.tick(cursor).skip_message or "")

    watch.registry.unlink()
    assert "cannot read registry file" in (watch.tick(cursor).skip_message or "")


def test_a_file_still_being_copied_gives_a_skip_reason(
    watch: Watch, monkeypatch: pytest.MonkeyPatch
) -> None:
    cursor = watch.baseline()
    _append(watch.mirror / "act.pdf")
    ticks = iter(range(1_000_000))
    real = gazette_watch._signature

    def moving(st: Any) -> tuple[int, int, int, int]:
        size, _, ino, ctime = real(st)
        return (size, next(ticks), ino, ctime)  # a new mtime at every look

    monkeypatch.setattr(gazette_watch, "_signature", moving)
    data = watch.tick(cursor)
    assert not data.run_requests and data.cursor is None
    assert "still being written" in (data.skip_message or "")
    monkeypatch.undo()
    assert list(_requests(watch.tick(cursor))) == ["CENTRAL"]


def test_a_foreign_cursor_is_replaced_by_a_baseline(watch: Watch) -> None:
    data = watch.tick("not json at all")
    assert not data.run_requests
    assert "baseline" in (data.skip_message or "")
    assert WatchState.loads(data.cursor) is not None


def test_a_jurisdiction_not_yet_a_partition_becomes_one_with_the_ticks_result(
    watch: Watch,
) -> None:
    """The jurisdictions are data: a change in one the instance holds no partition of yet (a
    state's first document) adds its partition in the tick's result (no code reload) and
    requests its run."""
    sensor = watch.build(partition_keys=["CENTRAL", "GUJARAT"])  # KARNATAKA not a partition yet
    cursor = watch.tick(None, sensor).cursor
    _make_pdf(watch.mirror / "karnataka.pdf", "Karnataka rules")
    data = watch.tick(cursor, sensor)
    assert list(_requests(data)) == ["KARNATAKA"]
    (added,) = data.dynamic_partitions_requests or []
    assert isinstance(added, dg.AddDynamicPartitionsRequest)
    assert added.partitions_def_name == "jurisdiction" and list(added.partition_keys) == [
        "KARNATAKA"
    ]
    # one with no partition held and no document left (added and removed between two
    # ticks) has nothing to run
    sensor = watch.build(partition_keys=["CENTRAL", "GUJARAT"])
    watch.entries = [e for e in watch.entries if e["jurisdiction"] != "KARNATAKA"]
    watch.write_registry()
    emptied = watch.tick(data.cursor, sensor)
    assert not emptied.run_requests and not emptied.dynamic_partitions_requests
    assert "KARNATAKA" in (emptied.skip_message or "")
    assert "nothing to run" in (emptied.skip_message or "")


def test_online_checks_follow_the_etag_and_ignore_a_silent_server(watch: Watch) -> None:
    watch.entries[1]["download_urls"] = ["https://example.org/gujarat.pdf"]
    watch.write_registry()
    answer: dict[str, Any] = {"etag": '"v1"', "fail": False}

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "HEAD"
        if answer["fail"]:
            raise httpx.ConnectError("unreachable", request=request)
        return httpx.Response(200, headers={"ETag": answer["etag"]})

    def client() -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(handler))

    sensor = watch.build(online=True, online_interval_seconds=0, client_factory=client)
    cursor = watch.tick(None, sensor).cursor
    state = WatchState.loads(cursor)
    assert state is not None and any(k.startswith("remote:gujarat_rules@") for k in state.snapshot)
    assert not watch.tick(cursor, sensor).run_requests
    answer["fail"] = True  # no answer: the last fingerprint is kept
    assert not watch.tick(cursor, sensor).run_requests
    answer.update(fail=False, etag='"v2"')
    assert list(_requests(watch.tick(cursor, sensor))) == ["GUJARAT"]
    # The offline default never asks the network.
    assert not watch.tick(watch.tick(None).cursor).run_requests


# ------------------------------------------------------------------------------ gazette_watch


def test_remote_fingerprint_never_raises() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/down":
            raise httpx.ReadTimeout("slow", request=request)
        if request.url.path == "/missing":
            return httpx.Response(404)
        if request.url.path == "/bare":
            return httpx.Response(200)
        return httpx.Response(200, headers={"Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"})

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        assert gazette_watch.remote_fingerprint("https://x.test/down", client) is None
        assert gazette_watch.remote_fingerprint("https://x.test/missing", client) is None
        assert gazette_watch.remote_fingerprint("https://x.test/bare", client) is None
        assert "2024" in (gazette_watch.remote_fingerprint("https://x.test/ok", client) or "")


def test_unchanged_files_are_not_hashed_again(
    watch: Watch, monkeypatch: pytest.MonkeyPatch
) -> None:
    gazette_watch.clear_hash_cache()
    registry = load_registry(include_seed=False, paths=[watch.registry])
    real = gazette_watch.hashlib.file_digest
    hashed: list[str] = []

    def counting(fh: Any, digest: str) -> Any:
        hashed.append(fh.name)
        return real(fh, digest)

    monkeypatch.setattr(gazette_watch.hashlib, "file_digest", counting)
    first = gazette_watch.snapshot(registry, [watch.mirror], [watch.registry])
    assert len(hashed) == 3  # two PDFs and the registry file
    hashed.clear()
    assert gazette_watch.snapshot(registry, [watch.mirror], [watch.registry]) == first
    assert hashed == []
    _append(watch.mirror / "act.pdf")
    gazette_watch.snapshot(registry, [watch.mirror], [watch.registry])
    assert hashed == [str(watch.mirror / "act.pdf")]


def test_changed_partitions_maps_documents_to_jurisdictions(watch: Watch) -> None:
    registry = load_registry(include_seed=False, paths=[watch.registry])
    before = gazette_watch.snapshot(registry, [watch.mirror], [watch.registry])
    after = dict(before)
    after["pdf:gujarat_rules"] = "0" * 64
    after["pdf:karnataka_rules"] = "1" * 64
    after["registry:/elsewhere.yaml"] = "2" * 64  # bookkeeping only
    assert gazette_watch.changed_partitions(before, after, registry) == {
        "GUJARAT": ["gujarat_rules"],
        "KARNATAKA": ["karnataka_rules"],
    }
    assert gazette_watch.changed_partitions(before, before, registry) == {}


def test_cursor_round_trip_is_compact_json() -> None:
    state = WatchState(snapshot={"pdf:a": "x", "spec:a": "CENTRAL:y"}, seq=3)
    text = state.dumps()
    assert " " not in text and json.loads(text)["snapshot"] == state.snapshot
    assert WatchState.loads(text) == state
    assert WatchState.loads("") is None
    with pytest.raises(gazette_watch.CursorError):
        WatchState.loads('{"v": 99}')


# ------------------------------------------------------------------------------ schedules


def _schedule_requests(
    schedule: dg.ScheduleDefinition, repo: dg.RepositoryDefinition | None = None
) -> list[dg.RunRequest]:
    """The schedule function's requests; with ``repo``, evaluated the way the daemon does. Each
    request's partition is one the instance holds (the schedule adds it when it is new)."""
    ist = dt.timezone(dt.timedelta(hours=5, minutes=30))
    with dg.instance_for_test() as instance:
        context = dg.build_schedule_context(
            instance=instance,
            scheduled_execution_time=dt.datetime(2026, 1, 5, 3, 0, tzinfo=ist),
            repository_def=repo,
        )
        if repo is not None:
            requests = list(schedule.evaluate_tick(context).run_requests or [])
        else:
            result = schedule(context)
            assert isinstance(result, dg.RunRequest)
            requests = [result]
        held = set(instance.get_dynamic_partitions("jurisdiction"))
        assert {r.partition_key for r in requests} <= held
        return requests


def test_one_schedule_per_jurisdiction_each_for_its_own_partition(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV_REINGEST_CRON, raising=False)
    schedules = build_reingest_schedules(build_ingest_job(neo4j_enabled=False))
    assert sorted(s.name for s in schedules) == sorted(f"reingest_{j}" for j in JURISDICTIONS)
    for schedule in schedules:
        assert schedule.cron_schedule == DEFAULT_REINGEST_CRON
        assert schedule.execution_timezone == REINGEST_TIMEZONE
        assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
        assert schedule.job_name == "ingest_job"
        requests = _schedule_requests(schedule)
        assert [r.partition_key for r in requests] == [schedule.name.removeprefix("reingest_")]


def test_schedule_cron_comes_from_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_REINGEST_CRON, "30 1 * * 0")
    schedules = build_reingest_schedules(build_ingest_job(neo4j_enabled=False))
    assert {s.cron_schedule for s in schedules} == {"30 1 * * 0"}
    monkeypatch.setenv(ENV_REINGEST_CRON, "every monday")
    with pytest.raises(dg.DagsterInvalidDefinitionError, match=ENV_REINGEST_CRON):
        build_reingest_schedules(build_ingest_job(neo4j_enabled=False))


# ------------------------------------------------------------------------------ in Definitions


def test_schedules_and_sensor_resolve_against_the_real_ingest_job(
    watch: Watch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from civicsetu_pipelines.defs import ASSET_MODULES
    from civicsetu_pipelines.defs.io_managers import PartitionedParquetIOManager
    from civicsetu_pipelines.defs.resources import default_resources

    monkeypatch.delenv(ENV_REINGEST_CRON, raising=False)
    modules = ASSET_MODULES
    job = build_ingest_job(neo4j_enabled=False)
    resources = default_resources()
    resources["parquet_io"] = PartitionedParquetIOManager(base_dir=str(tmp_path / "assets"))
    sensor = build_gazette_sensor(
        job, mirror_dirs=[watch.mirror, watch.drop], registry_files=[watch.registry]
    )
    defs = dg.Definitions(
        assets=dg.load_assets_from_modules(modules),
        asset_checks=dg.load_asset_checks_from_modules(modules),
        jobs=[job],
        schedules=build_reingest_schedules(job),
        sensors=[sensor],
        resources=resources,
    )
    with dg.instance_for_test() as instance:
        repo = defs.get_repository_def()
        job_def = defs.resolve_job_def("ingest_job")
        assert isinstance(job_def.partitions_def, dg.DynamicPartitionsDefinition)
        assert repo.get_sensor_def(SENSOR_NAME).job_name == "ingest_job"
        partitions = add_jurisdiction_partitions(instance)
        assert sorted(partitions) == JURISDICTIONS

        def resolved(request: dg.RunRequest) -> dg.RunRequest:
            dg.validate_run_config(job_def, request.run_config)
            return request.with_resolved_tags_and_config(job_def, [], instance)

        for jurisdiction in partitions:
            schedule = defs.resolve_schedule_def(f"reingest_{jurisdiction}")
            assert schedule.job_name == "ingest_job"
            (request,) = _schedule_requests(schedule, repo)
            assert resolved(request).tags["dagster/partition"] == jurisdiction

        live = defs.resolve_sensor_def(SENSOR_NAME)
        ref = instance.get_ref()  # as the daemon evaluates it: dynamic partitions resolved
        cursor = live.evaluate_tick(
            dg.build_sensor_context(instance=instance, instance_ref=ref, definitions=defs)
        ).cursor
        _append(watch.mirror / "gujarat.pdf")
        data = live.evaluate_tick(
            dg.build_sensor_context(
                cursor=cursor, instance=instance, instance_ref=ref, definitions=defs
            )
        )
        (request,) = data.run_requests or []
        assert resolved(request).tags["dagster/partition"] == "GUJARAT"
