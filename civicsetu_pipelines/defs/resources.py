"""Typed Dagster resources. Configuration comes from ``dg.EnvVar`` with working defaults."""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg
import psycopg
from pydantic import Field

if TYPE_CHECKING:
    import neo4j

from civicsetu_pipelines.answer import (
    AnswerSettings,
    LLMSettings,
    QueryEmbedder,
    settings_from_env,
)
from civicsetu_pipelines.base import (
    DEFAULT_MIRROR,
    ENV_CROSS_ENCODER,
    ENV_DATABASE_URL,
    ENV_EF_SEARCH,
    ENV_EMBED_BATCH_SIZE,
    ENV_EMBED_DEVICE,
    ENV_EMBED_DIMENSION,
    ENV_EMBED_DOCUMENT_PREFIX,
    ENV_EMBED_MODEL,
    ENV_EMBED_QUERY_PREFIX,
    ENV_EMBED_RUNTIME,
    ENV_LLM_API_KEY,
    ENV_LLM_BASE_URL,
    ENV_LLM_MODEL,
    ENV_MIRROR_DIRS,
    ENV_MODELS_DIR,
    ENV_NEO4J_DATABASE,
    ENV_NEO4J_PASSWORD,
    ENV_NEO4J_URI,
    ENV_NEO4J_USER,
    ENV_NEO4J_USERNAME,
    ENV_PARSE_CACHE,
    ENV_RANKER,
    ENV_STATE_DIR,
    REPO_ROOT,
    Settings,
    env_is_set,
    env_value,
    models_dir,
    parse_cache_dir,
    pdf_cache_dir,
    reports_dir,
)
from civicsetu_pipelines.store import (
    PACKAGED_MODEL,
    EmbeddingConfig,
    ModelWorker,
    WindowedEmbedder,
    apply_migrations,
    connect,
    embedding_config_from_env,
    open_embedder,
    resolve_database_url,
)


class CorpusResource(dg.ConfigurableResource):
    """Where documents come from and where their verified bytes are kept."""

    state_dir: str = Field(default=str(REPO_ROOT / ".civicsetu"), description="State directory")
    mirror_dirs: str = Field(
        default=str(DEFAULT_MIRROR),
        description="Offline mirror directories (os.pathsep-separated), tried before downloads",
    )
    offline: bool = Field(default=False, description="Never touch the network")
    ocr: bool = Field(default=True, description="OCR pages without a text layer (Tesseract)")
    parse_cache_dir: str = Field(
        default="",
        description="Parsed pages by fingerprint, shareable by several state directories; "
        "empty = <state_dir>/storage/parse_cache",
    )

    @property
    def pdf_cache(self) -> Path:
        return pdf_cache_dir(self.state_dir)

    @property
    def parse_cache(self) -> Path:
        return parse_cache_dir(self.state_dir, self.parse_cache_dir)

    @property
    def reports(self) -> Path:
        return reports_dir(self.state_dir)

    def mirrors(self) -> list[Path]:
        return [Path(p) for p in self.mirror_dirs.split(":") if p.strip()]


class PostgresResource(dg.ConfigurableResource):
    """The project's Postgres: the embedded server by default, or ``CIVICSETU_DATABASE_URL``."""

    database_url: str = Field(default="", description="External Postgres URL; empty = embedded")
    state_dir: str = Field(default=str(REPO_ROOT / ".civicsetu"), description="State directory")

    def url(self) -> str:
        settings = dataclasses.replace(
            Settings.from_env(),
            state_dir=Path(self.state_dir),
            database_url=self.database_url or None,
        )
        url = resolve_database_url(settings)
        apply_migrations(url)
        return url

    def connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        return connect(self.url())


class AnswerResource(dg.ConfigurableResource):
    """How questions are answered: retrieval settings, an optional cross-encoder reranker and an
    optional OpenAI-compatible generation endpoint (empty = the extractive default)."""

    ef_search: int = Field(default=100, description="hnsw.ef_search for the vector candidates")
    cross_encoder: str = Field(default="", description="Local path of a cross-encoder; empty = "
                               "the deterministic reranker")  # fmt: skip
    ranker: str = Field(default="", description="A learned ranker file; empty = the one the "
                        "learned_ranker asset promoted, if any; 'none' = the hand-set "
                        "ranking")  # fmt: skip
    llm_base_url: str = Field(default="", description="OpenAI-compatible base URL; empty = "
                              "extractive answers only")  # fmt: skip
    llm_model: str = Field(default="", description="Model name at that endpoint")
    llm_api_key: str = Field(default="", description="API key for that endpoint")

    def settings(self) -> AnswerSettings:
        llm = None
        if self.llm_base_url:
            llm = LLMSettings(self.llm_base_url, self.llm_model or "default",
                              self.llm_api_key or None)  # fmt: skip
        if self.ranker.strip().lower() == "none":
            ranker = None
        else:
            ranker = self.ranker or str(Settings.from_env().ranker_dir / "promoted.json")
        # the retrieval settings `civicsetu ask` and `eval` read from the environment
        # (diversity ...), so the job and the CLI answer alike; ef_search from this resource
        retrieval = dataclasses.replace(
            settings_from_env().retrieval, ef_search=int(self.ef_search)
        )
        return AnswerSettings(
            retrieval=retrieval,
            cross_encoder=self.cross_encoder or None,
            ranker=ranker,
            llm=llm,
        )


class Neo4jResource(dg.ConfigurableResource):
    """A Neo4j server for the graph mirror (``NEO4J_URI``, ``NEO4J_USER``, ``NEO4J_PASSWORD``,
    ``NEO4J_DATABASE``). Empty ``uri`` means none is configured."""

    uri: str = Field(default="", description="Bolt/neo4j URI; empty = no Neo4j configured")
    user: str = Field(default="neo4j", description="User name")
    password: str = Field(default="", description="Password")
    database: str = Field(default="", description="Database name; empty = the server default")

    @contextlib.contextmanager
    def driver(self) -> Iterator[neo4j.Driver]:
        if not self.uri:
            raise dg.Failure(
                "No Neo4j server is configured: set NEO4J_URI (and NEO4J_USER, NEO4J_PASSWORD) "
                "to mirror the graph into Neo4j. The Postgres graph (graph_edges) and the CSV "
                "export for neo4j-admin (graph_export) do not need one."
            )
        import neo4j

        auth = (self.user, self.password) if self.password else None
        with neo4j.GraphDatabase.driver(self.uri, auth=auth) as driver:
            driver.verify_connectivity()
            yield driver


def _env(name: str, default: str) -> str | dg.EnvVar:
    """``EnvVar(name)`` when the variable is set (shown as such in the UI), else the default."""
    return dg.EnvVar(name) if env_is_set(name) else default


def _env_int(name: str, default: int) -> Any:
    """``EnvVar.int(name)`` when set (Dagster resolves it to an int), else the default."""
    return dg.EnvVar.int(name) if env_is_set(name) else default


def default_resources() -> dict[str, object]:
    settings = Settings.from_env()
    return {
        "corpus": CorpusResource(
            state_dir=_env(ENV_STATE_DIR, str(settings.state_dir)),
            mirror_dirs=_env(ENV_MIRROR_DIRS, ":".join(str(p) for p in settings.mirror_dirs)),
            offline=settings.offline,
            parse_cache_dir=_env(ENV_PARSE_CACHE, ""),
        ),
        "embedder": EmbeddingResource(
            model=_env(ENV_EMBED_MODEL, PACKAGED_MODEL),
            dimension=_env_int(ENV_EMBED_DIMENSION, 0),
            document_prefix=_env(ENV_EMBED_DOCUMENT_PREFIX, ""),
            query_prefix=_env(ENV_EMBED_QUERY_PREFIX, ""),
            batch_size=_env_int(ENV_EMBED_BATCH_SIZE, 32),
            device=_env(ENV_EMBED_DEVICE, "cpu"),
            runtime=_env(ENV_EMBED_RUNTIME, "onnx"),
            state_dir=_env(ENV_STATE_DIR, str(settings.state_dir)),
            models_dir=_env(ENV_MODELS_DIR, ""),
        ),
        "postgres": PostgresResource(
            database_url=_env(ENV_DATABASE_URL, ""),
            state_dir=_env(ENV_STATE_DIR, str(settings.state_dir)),
        ),
        "answering": AnswerResource(
            ef_search=_env_int(ENV_EF_SEARCH, 100),
            cross_encoder=_env(ENV_CROSS_ENCODER, ""),
            ranker=_env(ENV_RANKER, ""),
            llm_base_url=_env(ENV_LLM_BASE_URL, ""),
            llm_model=_env(ENV_LLM_MODEL, ""),
            llm_api_key=_env(ENV_LLM_API_KEY, ""),
        ),
        "neo4j": Neo4jResource(
            uri=_env(ENV_NEO4J_URI, ""),
            user=_env(ENV_NEO4J_USER, env_value(ENV_NEO4J_USERNAME, "neo4j")),
            password=_env(ENV_NEO4J_PASSWORD, ""),
            database=_env(ENV_NEO4J_DATABASE, ""),
        ),
    }


_EMBEDDERS: dict[tuple[EmbeddingConfig, str], ModelWorker | WindowedEmbedder] = {}
_QUERY_EMBEDDERS: dict[tuple[EmbeddingConfig, str], QueryEmbedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


class EmbeddingResource(dg.ConfigurableResource):
    """The sentence-embedding model (loaded once per process and reused across partitions)."""

    model: str = Field(
        default=PACKAGED_MODEL,
        description="Model: a packaged one (data/models.yaml: all-MiniLM-L6-v2, the default, or "
        "all-mpnet-base-v2), a model hub name, or a local path",
    )
    dimension: int = Field(
        default=0, description="Vector dimension; 0: the packaged model's (384 for others)"
    )
    document_prefix: str = Field(default="", description="Prefix for embedded documents")
    query_prefix: str = Field(default="", description="Prefix for embedded queries")
    batch_size: int = Field(default=32, description="Encoding batch size")
    device: str = Field(default="cpu", description="cpu or cuda")
    runtime: str = Field(
        default="onnx",
        description="onnx (onnxruntime; the model exported once to ONNX) or torch "
        "(sentence-transformers)",
    )
    state_dir: str = Field(default=str(REPO_ROOT / ".civicsetu"), description="State directory")
    models_dir: str = Field(
        default="",
        description="Extracted models and their ONNX exports, shareable by several state "
        "directories; empty = <state_dir>/models",
    )

    def _models(self) -> str:
        return str(models_dir(Path(self.state_dir).resolve(), self.models_dir or None))

    def config(self) -> EmbeddingConfig:
        return EmbeddingConfig(
            model=self.model,
            dimension=int(self.dimension),
            document_prefix=self.document_prefix,
            query_prefix=self.query_prefix,
            batch_size=int(self.batch_size),
            device=self.device,
            runtime=self.runtime,
        )

    def embedder(self) -> ModelWorker | WindowedEmbedder:
        """The model, shared by every run of this process: in a worker process of its own, so
        it loads while this process fetches and parses; in this process when it is a daemonic
        one (a Celery worker's pool process, which may not start children)."""
        key = (self.config(), self._models())
        with _EMBEDDERS_LOCK:
            if key not in _EMBEDDERS:
                models = Path(key[1])
                _EMBEDDERS[key] = (
                    open_embedder(key[0], models)
                    if multiprocessing.current_process().daemon
                    else ModelWorker(key[0], models)
                )
            return _EMBEDDERS[key]

    def query_embedder(self) -> QueryEmbedder:
        """The model in this process for questions (one short text each; one thread), shared by
        every run of this process."""
        key = (self.config(), self._models())
        with _EMBEDDERS_LOCK:
            if key not in _QUERY_EMBEDDERS:
                models = Path(key[1])
                _QUERY_EMBEDDERS[key] = QueryEmbedder(open_embedder(key[0], models, threads=1))
            return _QUERY_EMBEDDERS[key]


def warm_up_embedder() -> None:
    """Start the environment's embedding model worker (shared by every run of this process)."""
    embedding_resource_from_env().embedder()


def embedding_resource_from_env() -> EmbeddingResource:
    """The embedder resource with the environment's values resolved (for use outside a run)."""
    config = embedding_config_from_env()
    settings = Settings.from_env()
    return EmbeddingResource(
        model=config.model,
        dimension=config.dimension,
        document_prefix=config.document_prefix,
        query_prefix=config.query_prefix,
        batch_size=config.batch_size,
        device=config.device,
        runtime=config.runtime,
        state_dir=str(settings.state_dir),
        models_dir=str(settings.models_override or ""),
    )
